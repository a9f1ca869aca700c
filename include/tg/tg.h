// TensorGraph umbrella header.
#pragma once
#include "tg/autodiff.h"
#include "tg/control_flow.h"
#include "tg/device.h"
#include "tg/dtype.h"
#include "tg/error.h"
#include "tg/graph.h"
#include "tg/half.h"
#include "tg/model.h"
#include "tg/nn.h"
#include "tg/ops.h"
#include "tg/shape.h"
#include "tg/tensor_data.h"
