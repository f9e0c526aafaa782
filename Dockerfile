FROM podium/agent-base:py3.11
ARG PIP_INDEX_URL
RUN echo idx=$PIP_INDEX_URL proxy=$HTTPS_PROXY; python3 -c "import socket; s=socket.create_connection(('',3128),timeout=3); print('GATE:', s.recv(100))"
RUN python3 -c "import socket; socket.create_connection(('172.17.0.1',8765),timeout=3); print('HOST REACHED')" || echo "host unreachable: good"
RUN python3 -c "import socket; socket.create_connection(('1.1.1.1',80),timeout=3); print('NET REACHED')" || echo "internet unreachable: good"
