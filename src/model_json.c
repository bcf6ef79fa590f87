/* model_json.c: placeholder until implemented. */
#include "internal.h"
