/* ui.h */
#ifndef SL_UI_H
#define SL_UI_H
#include "shardlab.h"
#include "internal.h"
int ui_main(int argc, char **argv);
#endif
