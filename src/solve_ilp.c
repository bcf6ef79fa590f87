/* solve_ilp.c: placeholder until implemented. */
#include "internal.h"
