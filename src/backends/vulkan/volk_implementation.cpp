// volk's function-pointer table and loader, compiled once into the backend.
// Included from the system header directory, so its code is not held to our
// warning flags.
#define VOLK_IMPLEMENTATION
#include <volk.h>
