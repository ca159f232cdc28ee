// Asio and Beast compiled once for the whole project (BOOST_ASIO_SEPARATE_COMPILATION and
// BOOST_BEAST_SEPARATE_COMPILATION): every other translation unit sees declarations only,
// which keeps two-core builds fast.
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
