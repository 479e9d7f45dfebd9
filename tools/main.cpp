#include <cstdio>

int main() {
  std::puts("sam2rt");
  return 0;
}
