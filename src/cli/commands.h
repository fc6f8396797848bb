#pragma once

namespace sc::cli {

// Each returns the process exit code; bad input throws sc::Error (printed by main).
int Estimate(int argc, char** argv);

}  // namespace sc::cli
