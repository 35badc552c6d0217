"""Serve agenthost tools from a Python program.

This module speaks what the host expects of a plugin: the go-plugin
handshake, the ToolPlugin service of tool.proto, go-plugin's controller
(so the host can stop the plugin gracefully) and health services, logs
the host understands, and SIGTERM. Copy it, with tool_pb2.py (generated
from tool.proto by protoc --python_out), beside your plugin. It needs
grpcio and protobuf (Debian: python3-grpcio, python3-protobuf).
"""

import json
import os
import signal
import sys
import tempfile
import threading
from concurrent import futures
from datetime import datetime, timezone

import grpc

import tool_pb2

PROTOCOL_MINOR = 3  # the version of tool.proto this module speaks
MAX_MESSAGE = (64 << 20) + (1 << 20)  # the host's limit, with room for the envelope


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

    def describe(request, context):
        return tool_pb2.DescribeResponse(
            plugin_name=name, plugin_version=version, protocol_minor=PROTOCOL_MINOR,
            permissions=tool_pb2.Permissions(**(permissions or {})), tools=[t.spec for t in tools])

    def execute(request, context):
        tool = by_name.get(request.tool)
        if tool is None:
            return tool_pb2.ExecuteResponse(error=f"this plugin serves no tool named {json.dumps(request.tool)}")
        try:
            result = tool.run(json.loads(request.arguments or b"{}"), Call(list(request.workspace_roots)))
        except Exception as err:  # the call's error, for the model; the plugin goes on
            return tool_pb2.ExecuteResponse(error=str(err) or type(err).__name__)
        return tool_pb2.ExecuteResponse(result=result if isinstance(result, str) else json.dumps(result))

    def stop():
        server.stop(None)  # ends the calls under way
        os._exit(0)  # without waiting for tools that ignore it

    def shutdown(request, context):
        context.add_callback(lambda: threading.Thread(target=stop).start())
        return b""  # go-plugin's Empty

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=[
        ("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)])
    server.add_generic_rpc_handlers((
        grpc.method_handlers_generic_handler("agenthost.tool.v1.ToolPlugin", {
            "Describe": grpc.unary_unary_rpc_method_handler(
                describe, tool_pb2.DescribeRequest.FromString, tool_pb2.DescribeResponse.SerializeToString),
            "Execute": grpc.unary_unary_rpc_method_handler(
                execute, tool_pb2.ExecuteRequest.FromString, tool_pb2.ExecuteResponse.SerializeToString),
        }),
        # go-plugin's services, whose messages need no .proto: Empty is no
        # bytes, and a health answer of SERVING is field 1 set to 1. The
        # host stops a plugin serving calls through the controller;
        # go-plugin's Ping asks the health service.
        grpc.method_handlers_generic_handler("plugin.GRPCController", {
            "Shutdown": grpc.unary_unary_rpc_method_handler(shutdown)}),
        grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
            "Check": grpc.unary_unary_rpc_method_handler(lambda request, context: b"\x08\x01")}),
    ))

    # The host gives the plugin a directory for its socket, which its
    # sandbox lets it use; nothing else is writable.
    directory = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or tempfile.mkdtemp(prefix="plugin")
    socket = os.path.join(directory, f"plugin-{os.getpid()}.sock")

    def terminate(signum, frame):
        # The host died (the kernel tells its plugins with SIGTERM): remove
        # the socket directory (the host's sockets too), which it cannot,
        # and take along the group's other processes, should a tool have
        # started any.
        try:
            for entry in os.listdir(directory):
                os.remove(os.path.join(directory, entry))
            os.rmdir(directory)
        except OSError:
            pass
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
        os._exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, terminate)
    server.add_insecure_port("unix:" + socket)
    server.start()
    # The handshake: core protocol 1, app protocol 1, where, and how.
    print(f"1|1|unix|{socket}|grpc", flush=True)
    server.wait_for_termination()
    os._exit(0)
