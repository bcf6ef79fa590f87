#ifndef SL_RUNNER_H
#define SL_RUNNER_H
#endif
