#include "kernelproto/iso_time.hpp"
