#include "launcher/kernelspec.hpp"
