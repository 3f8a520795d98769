# vmm in a container, for test clusters of migration hosts.
#   docker build -t vmm .
#   docker run --rm --device /dev/kvm -p 7000:7000 vmm run --incoming 0.0.0.0:7000
#   docker run --rm --device /dev/kvm vmm run /usr/local/share/vmm/examples/dirty.cfg
# The guest tests need /dev/kvm, which `docker build` does not have, so the
# image build runs the unit tests only (VMM_TESTS_NO_KVM=1).
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
 && cmake --build build -j"$(nproc)" \
 && VMM_TESTS_NO_KVM=1 ctest --test-dir build --output-on-failure -R '^unit\.(test_config|test_size|test_elf_loader|test_guest_mem|test_api)$'

FROM debian:12-slim
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      libevent-2.1-7 libevent-pthreads-2.1-7 libzstd1 libssl3 libinih1 libcjson1 libfdt1 libseccomp2 iproute2 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/vmm/vmm /usr/local/bin/vmm
# The default [firmware] path is compiled in as the build tree's path.
COPY --from=build /src/build/guest-firmware/vmm-firmware.elf /src/build/guest-firmware/vmm-firmware.elf
COPY examples /usr/local/share/vmm/examples
ENV VMM_RUN_DIR=/run/vmm
EXPOSE 7000
ENTRYPOINT ["/usr/local/bin/vmm"]
