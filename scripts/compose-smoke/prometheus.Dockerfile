# Smoke-test stand-in for prom/prometheus (no registry can be reached on the test machines):
# Debian's prometheus package on the locally built Debian base. Same entrypoint contract as the
# official image (the compose `command:` passes flags to the prometheus binary).
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN set -eux; \
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus; \
    rm -rf /var/lib/apt/lists/*; \
    mkdir -p /prometheus; chown nobody:nogroup /prometheus
USER nobody
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
