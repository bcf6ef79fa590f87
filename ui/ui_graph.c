/* ui_graph.c: placeholder. */
#include "ui.h"
