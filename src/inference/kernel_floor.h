// The measured per-kernel fixed cost moved to training/kernel_floor.h: one hardware description serves both the
// serving model (IterationCost) and the training estimate.
#pragma once
#include "training/kernel_floor.h"
