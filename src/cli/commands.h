#pragma once
#include <string>

#include "cli/args.h"
#include "parallel/job.h"
#include "trace/rank_traces.h"

namespace sc::cli {

// Each returns the process exit code; bad input throws sc::Error (printed by main).
int Estimate(int argc, char** argv);
int Summary(int argc, char** argv);
int Trace(int argc, char** argv);
int Search(int argc, char** argv);  // cmd_search.cpp
int Sweep(int argc, char** argv);   // cmd_sweep.cpp (sharded over MPI ranks in stagecraft-mpi)
int Serve(int argc, char** argv);   // cmd_serve.cpp

// `trace --format json`: one rank's Chrome trace (cmd_trace_json.cpp).
int TraceJson(const Job& job, const Args& a, const std::string& dir, const std::string& prefix);

}  // namespace sc::cli
