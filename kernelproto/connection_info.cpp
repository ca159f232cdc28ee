#include "kernelproto/connection_info.hpp"
