/* ui_keys.c: placeholder. */
#include "ui.h"
