// The one translation unit that defines volk's function pointers (volk.c compiles as C++).
#include <volk.c>
