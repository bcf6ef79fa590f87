/* solve_brute.c: placeholder until implemented. */
#include "internal.h"
