"""Serve agenthost tools from a Python program.

This module speaks what the host expects of a plugin: the go-plugin
handshake, the ToolPlugin service of tool.proto, go-plugin's controller
(so the host can stop the plugin gracefully) and health services, logs
the host understands, and SIGTERM. Copy it, with tool_pb2.py (generated
from tool.proto by protoc --python_out), beside your plugin. It needs h2
and protobuf (Debian: python3-h2, python3-protobuf).

A host of tool protocol 1.5 passes the plugin one end of a connected
socket (its descriptor number in AGENTHOST_PLUGIN_CONN), and the plugin
serves gRPC on that connection alone: it makes no socket of its own,
which the host's sandbox forbids. grpcio cannot serve on a connection it
did not accept, so this module serves gRPC itself: the little of it the
host uses (unary calls, over HTTP/2 without TLS) on the h2 library. An
older host gets a unix socket in PLUGIN_UNIX_SOCKET_DIR, as before.
"""

import json
import os
import queue
import signal
import socket
import sys
import tempfile
import threading
from datetime import datetime, timezone

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

import tool_pb2

PROTOCOL_MINOR = 5  # the version of tool.proto this module speaks
MAX_MESSAGE = (64 << 20) + (1 << 20)  # the host's limit, with room for the envelope
WINDOW = 16 << 20  # the flow-control windows offered to the host, as large as its own
SHUTDOWN = "/plugin.GRPCController/Shutdown"


def log(level, message, **fields):
    """Write one line to the host's log: a JSON line on stderr, as hclog
    writes them. level is trace, debug, info, warn or error."""
    line = dict(fields)
    line.update({
        "@level": level,
        "@message": message,
        "@timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    })
    sys.stderr.write(json.dumps(line) + "\n")
    sys.stderr.flush()


class Tool:
    """One tool (see ToolSpec in tool.proto): run(args, call) returns the
    result as a string, and whatever it raises is the call's error, which
    the model reads as "Error executing NAME: MESSAGE". call.roots are the
    host's workspace roots, call.log is log. The host checks each call's
    arguments against schema (a JSON Schema object) before run sees them."""

    def __init__(self, name, description, schema, run, read_only=False, destructive=False,
                 idempotent=False, open_world=False, opt_in=False, timeout_ms=0):
        self.run = run
        self.spec = tool_pb2.ToolSpec(
            name=name, description=description, parameters_schema=json.dumps(schema).encode(),
            annotations=tool_pb2.Annotations(read_only=read_only, destructive=destructive,
                                             idempotent=idempotent, open_world=open_world),
            opt_in=opt_in, timeout_ms=timeout_ms)


class Call:
    """What a tool's run gets besides its arguments."""

    def __init__(self, roots):
        self.roots = roots
        self.log = log


def serve(tools, name=None, version="dev", permissions=None):
    """Serve tools to the host that started this process, until the host
    stops it. permissions are tool_pb2.Permissions fields, such as
    {"roots": "ROOTS_READ"}."""
    name = name or os.path.basename(os.path.realpath(sys.argv[0]))
    if os.environ.get("AGENTHOST_PLUGIN") != "d1f4a7c2-tool-binary":
        sys.stderr.write(f"{name} is an agenthost plugin: put it in agenthost's plugins directory, and agenthost runs it\n")
        sys.exit(1)
    if "1" not in os.environ.get("PLUGIN_PROTOCOL_VERSIONS", "1").split(","):
        log("error", "the host speaks none of the protocol versions of this plugin (1)",
            host=os.environ.get("PLUGIN_PROTOCOL_VERSIONS"))
        sys.exit(1)
    by_name = {t.spec.name: t for t in tools}

    def describe(request):
        return tool_pb2.DescribeResponse(
            plugin_name=name, plugin_version=version, protocol_minor=PROTOCOL_MINOR,
            permissions=tool_pb2.Permissions(**(permissions or {})), tools=[t.spec for t in tools])

    def execute(request):
        tool = by_name.get(request.tool)
        if tool is None:
            return tool_pb2.ExecuteResponse(error=f"this plugin serves no tool named {json.dumps(request.tool)}")
        try:
            result = tool.run(json.loads(request.arguments or b"{}"), Call(list(request.workspace_roots)))
        except Exception as err:  # the call's error, for the model; the plugin goes on
            return tool_pb2.ExecuteResponse(error=str(err) or type(err).__name__)
        return tool_pb2.ExecuteResponse(result=result if isinstance(result, str) else json.dumps(result))

    # Each method takes the request's bytes and returns the answer's.
    # go-plugin's services need no .proto: Empty is no bytes, and a health
    # answer of SERVING is field 1 set to 1. The host stops a plugin serving
    # calls through the controller (the process exits once it has
    # answered); go-plugin's Ping asks the health service. Any other
    # method, go-plugin's broker and stdio streams and the Host stream
    # included, is answered UNIMPLEMENTED.
    methods = {
        "/agenthost.tool.v1.ToolPlugin/Describe":
            lambda data: describe(tool_pb2.DescribeRequest.FromString(data)).SerializeToString(),
        "/agenthost.tool.v1.ToolPlugin/Execute":
            lambda data: execute(tool_pb2.ExecuteRequest.FromString(data)).SerializeToString(),
        SHUTDOWN: lambda data: b"",
        "/grpc.health.v1.Health/Check": lambda data: b"\x08\x01",
    }

    # An older host gives the plugin a directory for its socket, which its
    # sandbox lets it use; nothing else is writable.
    conn = os.environ.get("AGENTHOST_PLUGIN_CONN")
    directory = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or (tempfile.mkdtemp(prefix="plugin") if conn is None else None)

    def terminate(signum, frame):
        # The host died (the kernel tells its plugins with SIGTERM): remove
        # the socket directory (the host's sockets too), which it cannot,
        # and take along the group's other processes, should a tool have
        # started any.
        try:
            for entry in os.listdir(directory):
                os.remove(os.path.join(directory, entry))
            os.rmdir(directory)
        except (OSError, TypeError):  # TypeError: no directory
            pass
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
        os._exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, terminate)
    if conn is not None:
        _serve_connection(conn, methods)
    else:
        _listen(directory, methods)


def _serve_connection(conn, methods):
    """Serve the connection the host made, on descriptor conn, and exit
    when it ends (the host closed its end, or died)."""
    try:
        sock = socket.socket(fileno=int(conn))
    except (ValueError, OSError) as err:
        log("error", f"AGENTHOST_PLUGIN_CONN={conn} is no connection: {err}")
        sys.exit(1)
    # The handshake: core protocol 1, app protocol 1, where, and how.
    print(f"1|1|unix|fd:{conn}|grpc", flush=True)
    _Connection(sock, methods, lambda: os._exit(0)).serve()


def _listen(directory, methods):
    """Serve, the old way, each connection to a unix socket in directory."""
    path = os.path.join(directory, f"plugin-{os.getpid()}.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    print(f"1|1|unix|{path}|grpc", flush=True)  # the handshake, naming the socket
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=_Connection(sock, methods, sock.close).serve, daemon=True).start()


class _Connection:
    """One HTTP/2 connection from the host, on which it makes gRPC calls of
    methods, unary all: a request, then an answer. The thread that calls
    serve reads the host's frames; each call runs in a thread of its own; a
    writer thread writes what h2 has to send, in the order h2 made it. lock
    guards h2, and is notified whenever the host opens a flow-control window
    or ends a stream, for the calls waiting to send."""

    def __init__(self, sock, methods, closed):
        self.sock, self.methods, self.closed = sock, methods, closed
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.lock = threading.Condition()
        self.requests = {}  # stream id -> [path, the request's bytes so far]
        self.ended = False
        self.outbox = queue.SimpleQueue()
        self.writer = threading.Thread(target=self._write, daemon=True)
        self.writer.start()

    def serve(self):
        """Serve the connection until it ends, then call closed."""
        with self.lock:
            self.h2.initiate_connection()
            self.h2.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: WINDOW})  # each call's
            self.h2.increment_flow_control_window(WINDOW - self.h2.inbound_flow_control_window)  # the connection's
            self._flush()
        while not self.ended:
            try:
                data = self.sock.recv(1 << 18)
            except OSError:
                data = b""
            with self.lock:
                try:
                    # PING and SETTINGS h2 answers by itself.
                    events = self.h2.receive_data(data) if data else [h2.events.ConnectionTerminated()]
                except h2.exceptions.ProtocolError as err:  # h2 has a GOAWAY ready
                    log("error", f"the host's HTTP/2 is broken: {err!r}")
                    events = [h2.events.ConnectionTerminated()]
                for event in events:
                    self._handle(event)
                self._flush()
                self.lock.notify_all()
        self.outbox.put(None)
        self.writer.join(1)
        self.closed()

    def _handle(self, event):
        """Take in one event of the connection, with the lock held."""
        if isinstance(event, h2.events.RequestReceived):
            path = dict(event.headers).get(":path")
            if path in self.methods:
                self.requests[event.stream_id] = [path, bytearray()]
            else:  # at once: the host may wait for the answer to a stream before it sends anything
                self._answer(event.stream_id, 12, f"unknown method {path}")
        elif isinstance(event, h2.events.DataReceived):
            self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            request = self.requests.get(event.stream_id)
            if request is not None:
                request[1] += event.data
                if len(request[1]) > 5 + MAX_MESSAGE:
                    del self.requests[event.stream_id]
                    self._answer(event.stream_id, 8, f"received message larger than max ({MAX_MESSAGE} bytes)")
        elif isinstance(event, h2.events.StreamEnded) and event.stream_id in self.requests:
            path, request = self.requests.pop(event.stream_id)
            threading.Thread(target=self._call, args=(event.stream_id, path, request), daemon=True).start()
        elif isinstance(event, h2.events.StreamReset):  # the host gave up on the call
            self.requests.pop(event.stream_id, None)
        elif isinstance(event, h2.events.ConnectionTerminated):  # the host is gone, or going (GOAWAY)
            self.ended = True

    def _call(self, stream_id, path, request):
        """Run one call and answer it, in a thread of its own. A request is
        one message: a byte saying whether it is compressed (the host never
        does) and its length, 4 bytes big-endian, before it."""
        if len(request) < 5 or request[0] != 0 or int.from_bytes(request[1:5], "big") != len(request) - 5:
            return self._answer(stream_id, 13, "the request is not one uncompressed message")
        try:
            answer = self.methods[path](bytes(request[5:]))
        except Exception as err:  # a request that does not parse, or a bug
            return self._answer(stream_id, 2, f"{path}: {type(err).__name__}: {err}")
        self._answer(stream_id, 0, "", answer)
        if path == SHUTDOWN:  # once the answer is written
            self.outbox.put(lambda: os._exit(0))

    def _answer(self, stream_id, status, message, answer=None):
        """Send the answer to a call: headers, the answer (a message) unless
        None, and trailers with the gRPC status and message."""
        with self.lock:
            try:
                self.h2.send_headers(stream_id, [(":status", "200"), ("content-type", "application/grpc")])
                data = memoryview(len(answer).to_bytes(5, "big") + answer if answer is not None else b"")
                while data and not self.ended:
                    # As much as the host's windows and frame size let through,
                    # or wait for it to open them. A closed stream raises.
                    window = self.h2.local_flow_control_window(stream_id)
                    if window == 0:
                        self._flush()
                        self.lock.wait()
                        continue
                    size = min(len(data), window, self.h2.max_outbound_frame_size)
                    self.h2.send_data(stream_id, data[:size])
                    data = data[size:]
                trailers = [("grpc-status", str(status))] + ([("grpc-message", _percent(message))] if message else [])
                self.h2.send_headers(stream_id, trailers, end_stream=True)
            except h2.exceptions.StreamClosedError:
                pass  # the host gave up on the call (its deadline passed, or it was cancelled)
            except h2.exceptions.ProtocolError:
                pass  # the connection is ending
            self._flush()

    def _flush(self):
        """Pass on what h2 has to send, with the lock held, so that it is
        written in order."""
        data = self.h2.data_to_send()
        if data:
            self.outbox.put(data)

    def _write(self):
        """Write what _flush passes on, until serve ends: bytes, or a
        function to call once what came before it is written."""
        for data in iter(self.outbox.get, None):
            if callable(data):
                data()
                continue
            try:
                self.sock.sendall(data)
            except OSError:
                pass  # the host is gone: serve sees the end


def _percent(message):
    """grpc-message's encoding: percent-encoded UTF-8, but for printable
    ASCII."""
    return "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x25 else f"%{b:02X}" for b in message.encode())
