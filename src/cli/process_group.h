// The processes one command runs in: a single one for `stagecraft`, the ranks of an MPI job for
// `stagecraft-mpi` (built with -DSC_MPI=ON, which compiles this file against MPI). Commands that can be
// sharded (sweep) ask for their rank and gather their results at rank 0; everything else runs on every rank
// alike. Without MPI every call is the trivial one-process answer.
#pragma once
#include <string>
#include <vector>

namespace sc::cli {

struct ProcessGroup {
    int rank = 0;
    int size = 1;
    bool root() const { return rank == 0; }
};

ProcessGroup Processes();
// Every rank's `mine`, in rank order, at rank 0; an empty vector on the other ranks.
std::vector<std::string> GatherAtRoot(const std::string& mine);
// Start and stop (main): MPI_Init / MPI_Finalize under MPI, nothing otherwise.
void StartProcesses(int* argc, char*** argv);
void StopProcesses();
// After an error on any rank: ends every rank of the job (MPI_Abort) when there are several.
void AbortProcesses(int code);

}  // namespace sc::cli
