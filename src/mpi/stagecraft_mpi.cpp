// stagecraft-mpi: the stagecraft command line as an MPI program (cmake -DSC_MPI=ON). `sweep` shards its points
// over the ranks (round-robin) and rank 0 writes the merged rows, byte-identical to one process; every other
// command is refused on more than one rank. The CLI's own main() is compiled into this target as
// sc_cli_main (CMake defines main=sc_cli_main for the target; undone here).
#undef main
#include <cstdio>
#include <cstring>

#include "cli/process_group.h"

int sc_cli_main(int argc, char** argv);

int main(int argc, char** argv) {
    sc::cli::StartProcesses(&argc, &argv);
    const sc::cli::ProcessGroup g = sc::cli::Processes();
    int rc;
    if (g.size > 1 && argc >= 2 && std::strcmp(argv[1], "sweep") && std::strcmp(argv[1], "--help") &&
        std::strcmp(argv[1], "-h")) {
        if (g.root())
            std::fprintf(stderr,
                         "stagecraft-mpi: only `sweep` is distributed over MPI ranks; run `%s` with stagecraft "
                         "or on one rank\n",
                         argv[1]);
        rc = 2;
    } else {
        rc = sc_cli_main(argc, argv);
    }
    // An error after the ranks split up would leave the others waiting at the gather: end them all.
    if (rc != 0 && rc != 2) sc::cli::AbortProcesses(rc);
    sc::cli::StopProcesses();
    return rc;
}
