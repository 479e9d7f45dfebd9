#include "kernels/connected_components.h"

#include <cstddef>
#include <numeric>
#include <utility>

namespace sam2rt {

namespace {

int32_t find_root(std::vector<int32_t>& parent, int32_t i) {
  while (parent[static_cast<size_t>(i)] != i) {
    const int32_t grand = parent[static_cast<size_t>(parent[static_cast<size_t>(i)])];
    parent[static_cast<size_t>(i)] = grand;  // path halving
    i = grand;
  }
  return i;
}

void unite(std::vector<int32_t>& parent, int32_t a, int32_t b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a == b) return;
  if (a > b) std::swap(a, b);
  parent[static_cast<size_t>(b)] = a;
}

}  // namespace

std::vector<int32_t> component_areas(const uint8_t* mask, int64_t height, int64_t width) {
  const int64_t n = height * width;
  std::vector<int32_t> parent(static_cast<size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  // One raster pass joining each set pixel with its already-visited 8-neighbours
  // (left, upper-left, up, upper-right).
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      const int64_t i = y * width + x;
      if (!mask[i]) continue;
      const auto id = static_cast<int32_t>(i);
      if (x > 0 && mask[i - 1]) unite(parent, id, static_cast<int32_t>(i - 1));
      if (y > 0) {
        const int64_t up = i - width;
        if (x > 0 && mask[up - 1]) unite(parent, id, static_cast<int32_t>(up - 1));
        if (mask[up]) unite(parent, id, static_cast<int32_t>(up));
        if (x + 1 < width && mask[up + 1]) unite(parent, id, static_cast<int32_t>(up + 1));
      }
    }
  }
  std::vector<int32_t> size(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (mask[i]) ++size[static_cast<size_t>(find_root(parent, static_cast<int32_t>(i)))];
  }
  std::vector<int32_t> areas(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (mask[i]) areas[static_cast<size_t>(i)] = size[static_cast<size_t>(find_root(parent, static_cast<int32_t>(i)))];
  }
  return areas;
}

std::vector<int32_t> component_areas_reference(const uint8_t* mask, int64_t height, int64_t width) {
  const int64_t n = height * width;
  std::vector<int32_t> areas(static_cast<size_t>(n), 0);
  std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
  std::vector<int64_t> stack, members;
  for (int64_t start = 0; start < n; ++start) {
    if (!mask[start] || seen[static_cast<size_t>(start)]) continue;
    members.clear();
    stack.assign(1, start);
    seen[static_cast<size_t>(start)] = 1;
    while (!stack.empty()) {
      const int64_t i = stack.back();
      stack.pop_back();
      members.push_back(i);
      const int64_t y = i / width, x = i % width;
      for (int64_t dy = -1; dy <= 1; ++dy) {
        for (int64_t dx = -1; dx <= 1; ++dx) {
          const int64_t ny = y + dy, nx = x + dx;
          if (ny < 0 || nx < 0 || ny >= height || nx >= width) continue;
          const int64_t j = ny * width + nx;
          if (mask[j] && !seen[static_cast<size_t>(j)]) {
            seen[static_cast<size_t>(j)] = 1;
            stack.push_back(j);
          }
        }
      }
    }
    for (const int64_t i : members) areas[static_cast<size_t>(i)] = static_cast<int32_t>(members.size());
  }
  return areas;
}

}  // namespace sam2rt
