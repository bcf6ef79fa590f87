/* solve_dp.c: placeholder until implemented. */
#include "internal.h"
