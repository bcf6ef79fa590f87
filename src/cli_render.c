/* cli_render.c: placeholder until implemented. */
#include "internal.h"
