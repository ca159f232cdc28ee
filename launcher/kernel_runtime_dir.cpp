#include "launcher/kernel_runtime_dir.hpp"
