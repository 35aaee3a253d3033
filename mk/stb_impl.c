/* stb_impl.c — stb's PNG reader and writer compiled into a build that cannot
 * link the system's libstb: a cross build (make test-cross), whose target has
 * no libstb of its own. The code is Debian's libstb-dev headers, unchanged;
 * a native build links -lstb instead and never compiles this file. */
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image.h>
#include <stb_image_write.h>
