#ifndef SL_TESTUTIL_H
#define SL_TESTUTIL_H
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "shardlab.h"
#endif
