#include "kernelproto/websocket_format.hpp"
