/* gen.c: placeholder until implemented. */
#include "internal.h"
