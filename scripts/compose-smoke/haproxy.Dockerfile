# Smoke-test stand-in for the official haproxy image (no registry can be reached on the test
# machines): Debian's haproxy package on the locally built Debian base, run as its `haproxy` user.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN set -eux; \
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy; \
    rm -rf /var/lib/apt/lists/*; \
    mkdir -p /usr/local/etc/haproxy
USER haproxy
EXPOSE 8000 8404
CMD ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
