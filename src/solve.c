/* solve.c: placeholder until implemented. */
#include "internal.h"
