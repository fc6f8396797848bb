#include "cli/process_group.h"

#ifdef SC_MPI
#include <mpi.h>

#include <limits>

#include "config/error.h"
#endif

namespace sc::cli {

#ifdef SC_MPI

ProcessGroup Processes() {
    ProcessGroup g;
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    return g;
}

std::vector<std::string> GatherAtRoot(const std::string& mine) {
    const ProcessGroup g = Processes();
    // MPI counts are ints: a part or a whole past 2 GiB would be cut short, so it is an error instead (the
    // caller aborts every rank; see stagecraft_mpi.cpp).
    constexpr long long kMax = std::numeric_limits<int>::max();
    if (static_cast<long long>(mine.size()) > kMax)
        throw Error("", "rank " + std::to_string(g.rank) + "'s sweep output is " + std::to_string(mine.size()) +
                            " bytes, over MPI's 2 GiB per message: split the sweep (fewer --axis values per run)");
    int n = static_cast<int>(mine.size());
    std::vector<int> sizes(g.size), offsets(g.size);
    MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string all;
    if (g.root()) {
        long long total = 0;
        for (int r = 0; r < g.size; ++r) offsets[r] = static_cast<int>(total), total += sizes[r];
        if (total > kMax)
            throw Error("", "the merged sweep output is " + std::to_string(total) +
                                " bytes, over MPI's 2 GiB per message: split the sweep (fewer --axis values per run)");
        all.resize(static_cast<size_t>(total));
    }
    MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    std::vector<std::string> out;
    if (g.root())
        for (int r = 0; r < g.size; ++r) out.push_back(all.substr(offsets[r], sizes[r]));
    return out;
}

void StartProcesses(int* argc, char*** argv) { MPI_Init(argc, argv); }
void StopProcesses() { MPI_Finalize(); }
void AbortProcesses(int code) {
    if (Processes().size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

#else

ProcessGroup Processes() { return {}; }
std::vector<std::string> GatherAtRoot(const std::string& mine) { return {mine}; }
void StartProcesses(int*, char***) {}
void StopProcesses() {}
void AbortProcesses(int) {}

#endif

}  // namespace sc::cli
