/*
 * bartlstrain: BART-LS's training (see bartlstrain.c), internal to the
 * arch layer and its tests.
 */
#ifndef LC_BARTLSTRAIN_H
#define LC_BARTLSTRAIN_H

#include "arch/arch.h"

extern const lc_train_ops bartls_train_ops;

#endif
