/* ui.c: placeholder. */
#include "ui.h"
