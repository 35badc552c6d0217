// Preloaded (node --require ./loopback.cjs) by the tests that start a
// server over HTTP: a server that listens on a port without naming an
// address listens on 127.0.0.1 only, not on every interface. The
// everything server's HTTP mode names none, and its get-env tool answers
// with the whole environment.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const isPort =
    typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (isPort && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
