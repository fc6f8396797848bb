// Builds the symbolic graph of a decoder-only transformer (GPT-3, Llama 2/3, Mixtral, DeepSeek-V3
// families) and binds its symbols for one configuration.
#pragma once
#include "config/model_config.h"
#include "graph/graph.h"

namespace sc {

// Structural choices that change the graph's shape (numbers like tp stay symbolic).
struct GraphOptions {
    bool sequence_parallel = false;  // Megatron SP: norms/dropout on s/tp tokens, AG/RS instead of AR
    bool expert_tp = false;          // MoE experts split over the TP group (expert tensor parallelism)
    KernelChoices kernels;
};

Graph BuildTransformerGraph(const ModelConfig& m, const GraphOptions& options);

// Values for every symbol. Parallel degrees default to 1 (the whole model on one rank).
struct SymbolValues {
    int microbatch = 1;
    int tp = 1, cp = 1, ep = 1;
    bool deepep_dispatch = false;  // KernelChoices::deepep_dispatch of the graph
};
Binding BindSymbols(const ModelConfig& m, const SymbolValues& v);

}  // namespace sc
