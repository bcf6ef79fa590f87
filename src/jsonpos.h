/* jsonpos.h */
#ifndef SL_JSONPOS_H
#define SL_JSONPOS_H
#endif
