/* ui_draw.c: placeholder. */
#include "ui.h"
