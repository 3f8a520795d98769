# vmm in a container: one VM (or one incoming migration) per container.
#
#   scripts/container-test.sh            builds this image and migrates between two containers
#   podman build -t vmm .                (or docker build)
#
# Run flags (see docs/kubernetes.md for the same on Kubernetes):
#   --device /dev/kvm            required: the VM runs on KVM
#   --device /dev/userfaultfd    for postcopy: the default seccomp profile of
#                                podman/docker denies the userfaultfd syscall,
#                                the device (Linux >= 6.1) is what vmm uses then
#   -p 7000:7000                 the migration port of a target (`run --incoming 0.0.0.0:7000`)
#   -v vmm-run:/run/vmm          the API sockets (VMM_RUN_DIR), so the host or a
#                                sidecar can run `vmm migrate` against them
# e.g.
#   podman run -d --name src --device /dev/kvm vmm run /usr/local/share/vmm/examples/dirty.cfg
#   podman run -d --name dst --device /dev/kvm --device /dev/userfaultfd -p 7000:7000 \
#       vmm run --incoming 0.0.0.0:7000
#   podman exec src vmm migrate --vm dirty --to <dst address>:7000
#   podman exec src vmm migrate --status --vm dirty
#
# The guest tests need /dev/kvm, which an image build does not have, so the
# build stage runs the unit tests only (VMM_TESTS_NO_KVM=1).

# Shared libraries the binary needs (ldd; the build stage checks the list).
ARG RUNTIME_PACKAGES="libssl3 libzstd1 libinih1 libfdt1 libseccomp2 libevent-2.1-7 libcjson1"

FROM debian:12 AS build
ARG RUNTIME_PACKAGES
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh --build
COPY . .
# No build-tree firmware fallback and no build path in the binary (stripped)
# or the firmware (its debug info dropped): the image has only the installed
# layout (bin/vmm, share/vmm/vmm-firmware.elf).
RUN cmake -S . -B /tmp/build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVMM_LINUX_GUEST=OFF \
      -DVMM_BUILD_TREE_FIRMWARE=OFF -DCMAKE_INSTALL_PREFIX=/usr/local \
      -DCMAKE_C_FLAGS="-ffile-prefix-map=/src/= -ffile-prefix-map=/tmp/build/=" \
 && cmake --build /tmp/build -j"$(nproc)" \
 && VMM_TESTS_NO_KVM=1 ctest --test-dir /tmp/build --output-on-failure \
      -R '^unit\.(test_config|test_size|test_elf_loader|test_guest_mem|test_api)$' \
 && DESTDIR=/staging cmake --install /tmp/build --strip \
 && strip --strip-debug /staging/usr/local/share/vmm/vmm-firmware.elf \
 && install -D -m 0755 deploy/healthcheck.sh /staging/usr/local/lib/vmm-healthcheck
# Every library vmm links (but libc) must come from RUNTIME_PACKAGES.
RUN set -e; missing=; \
    for lib in $(ldd /staging/usr/local/bin/vmm | awk '$3 ~ /^\// {print $3}'); do \
      pkg=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null || dpkg -S "${lib#/usr}"); \
      pkg=${pkg%%:*}; \
      case " $RUNTIME_PACKAGES libc6 " in *" $pkg "*) ;; *) missing="$missing $pkg";; esac; \
    done; \
    [ -z "$missing" ] || { echo "RUNTIME_PACKAGES lacks:$missing" >&2; exit 1; }; \
    ! grep -rqa -e /tmp/build /staging || { echo "the install names the build tree" >&2; exit 1; }

FROM debian:12-slim
ARG RUNTIME_PACKAGES
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="vmm" \
      org.opencontainers.image.description="A small KVM VMM built for live migration (precopy, postcopy, TLS)" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.created="$CREATED" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.documentation="/usr/local/share/doc/vmm/README.md" \
      org.opencontainers.image.base.name="debian:12-slim"
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $RUNTIME_PACKAGES \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /staging/ /
ENV VMM_RUN_DIR=/run/vmm
RUN mkdir -p /run/vmm
VOLUME /run/vmm
EXPOSE 7000
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
  CMD ["/usr/local/lib/vmm-healthcheck"]
ENTRYPOINT ["/usr/local/bin/vmm"]
CMD ["--help"]
