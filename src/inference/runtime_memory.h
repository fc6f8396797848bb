// Memory a serving process holds on each GPU beyond its weights, activation workspace, Mamba states and KV cache:
// what each engine's own arithmetic for the KV cache's share leaves out, as measured in published engine logs.
// docs/serving.md, "KV capacity".
#pragma once

#include "inference/serving_config.h"

namespace sc {

// The CUDA context and the libraries' workspaces, as each KV policy sees them on one GPU.
//   free_fraction (TensorRT-LLM) takes its fraction of the memory free once the engine is loaded, so everything
//   the process holds by then counts. TensorRT-LLM's memory doc (NVIDIA/TensorRT-LLM@7ff5302
//   docs/source/reference/memory.md, FAQ 1) prints one H100 log: 79.10 GiB in all, 70.48 available, after a 6,695
//   MiB engine, 1,134.01 MiB of execution context, 43.29 MB of runtime buffers and 180.30 MB for the decoder;
//   0.77 GiB of what was held is none of those four. The workspace term stands for the execution context, so this
//   is the rest.
//   total_fraction (vLLM) takes its fraction of the whole device and subtracts what profiling allocated: the
//   weights, PyTorch's activation peak and the "non-torch" memory its forward pass added; the CUDA context falls in
//   the share it leaves free. vLLM 0.19's profiles on H100 (llm-d-incubation/llm-d-planner@d3121e0
//   accuracy/results/v0.19.0/logs, 41 runs at TP1) give 0.24-0.27 GiB of non-torch memory (one model family 0.46):
//   0.25, their median.
constexpr double kFreeFractionContextGiB = 0.77;
constexpr double kTotalFractionContextGiB = 0.25;
// A GPU that exchanges activations with others in its replica (tp > 1, or experts over ep ranks) also holds the
// collective library's buffers and the engine's all-reduce workspace: the same vLLM 0.19 logs give 2.06-2.21 GiB of
// non-torch memory at TP2 and TP4 (15 runs, ten models, median 2.09), 1.84 GiB above TP1's median. Measured under
// vLLM's NCCL and all-reduce buffers only; another engine's are taken to be the same size (ASSUMED).
constexpr double kCommunicationBuffersGiB = 1.84;

// Bytes per GPU: EngineConfig::runtime_memory_gib when the description states it, else the measured terms above
// (the context for the engine's KV policy, plus the buffers when the GPU communicates within its replica).
double RuntimeMemoryBytes(const EngineConfig& e, const PoolConfig& split);

}  // namespace sc
