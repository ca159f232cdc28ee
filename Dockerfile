# Callisto in a container: Debian 12, the same Debian packages as `make run`.
#   docker build -t callisto .                      (FROM debian:12 from a registry)
#   docker build --build-arg BASE_IMAGE=mybase .    (any Debian 12 base, e.g. one made with
#                                                   debootstrap, as tests/deploy/ does)
# The kernels inside stay sandboxed; compose.yaml says what the container needs for that.
ARG BASE_IMAGE=debian:12

FROM ${BASE_IMAGE} AS build
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      build-essential cmake pkg-config libboost-dev libzmq3-dev cppzmq-dev \
      nlohmann-json3-dev libssl-dev libseccomp-dev python3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake cmake
COPY common common
COPY kernelproto kernelproto
COPY transport transport
COPY launcher launcher
COPY gateway gateway
COPY docs/openapi.json docs/openapi.json
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCALLISTO_BUILD_TESTS=OFF -DCALLISTO_BUILD_LOAD=OFF \
 && cmake --build build -j"$(nproc)" --target callisto callisto-zygote \
 && strip build/gateway/callisto build/gateway/callisto-zygote build/gateway/callisto-jail-init

FROM ${BASE_IMAGE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      libzmq5 libssl3 libseccomp2 libpython3.11 bubblewrap ca-certificates curl \
      python3-ipykernel python3-numpy python3-pandas python3-matplotlib r-cran-irkernel \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/gateway/callisto /usr/local/bin/callisto
# Beside the gateway, where it looks for it: the fork server of Python kernels (--zygote).
COPY --from=build /src/build/gateway/callisto-zygote /usr/local/bin/callisto-zygote
# Beside the zygote, where it looks for it: each zygote kernel's pid 1.
COPY --from=build /src/build/gateway/callisto-jail-init /usr/local/bin/callisto-jail-init
COPY web /usr/share/callisto/web
COPY deploy/container-entrypoint.sh /usr/local/bin/callisto-entrypoint
# Kernels' working directories (one per kernel) and the audit log: volumes in compose.yaml.
RUN mkdir -p /var/lib/callisto/work /var/log/callisto
EXPOSE 8888
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s \
  CMD curl -fsS http://127.0.0.1:8888/readyz || exit 1
ENTRYPOINT ["/usr/local/bin/callisto-entrypoint"]
CMD ["--ip=0.0.0.0", "--port=8888", "--web-root=/usr/share/callisto/web"]
