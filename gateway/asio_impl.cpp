// Asio and Beast compiled once for the whole project (BOOST_ASIO_SEPARATE_COMPILATION and
// BOOST_BEAST_SEPARATE_COMPILATION): every other translation unit sees declarations only,
// which keeps two-core builds fast. TLS (OpenSSL) included.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
