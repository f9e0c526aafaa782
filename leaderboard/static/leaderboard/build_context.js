// Reads what a build context declares, in the browser, before it is uploaded: its top-level
// Dockerfile and manifests (aicrowd.json, podium.json), as the server's upload check reads them
// (evaluator/tar_scan.py). The submission form sends them with the preflight, which checks the
// base images and models as the upload will. A plain tar is read header by header (its data
// skipped); a gzip one through the browser's DecompressionStream, up to MAX_GZIP_BYTES. Anything
// else, or a tar it cannot read, gives null: the server then checks at the upload.
(function () {
  "use strict";

  var MANIFESTS = ["aicrowd.json", "podium.json"];
  var MAX_MANIFEST_BYTES = 64 * 1024;
  var MAX_DOCKERFILE_BYTES = 1024 * 1024;
  var MAX_GZIP_BYTES = 512 * 1024 * 1024;

  // A plain tar: each header read by itself, data skipped by position.
  function fileSource(file) {
    var pos = 0;
    return {
      read: function (n) {
        var part = file.slice(pos, pos + n);
        pos += n;
        return part.arrayBuffer().then(function (b) { return new Uint8Array(b); });
      },
      skip: function (n) { pos += n; return Promise.resolve(); },
    };
  }

  // A gzip tar: the decompressed stream, consumed in order.
  function streamSource(stream) {
    var reader = stream.getReader(), chunks = [], held = 0, total = 0;
    function fill(n) {
      if (held >= n) return Promise.resolve(true);
      return reader.read().then(function (step) {
        if (step.done) return false;
        total += step.value.length;
        if (total > MAX_GZIP_BYTES) throw new Error("too large to read here");
        chunks.push(step.value);
        held += step.value.length;
        return fill(n);
      });
    }
    function take(n, keep) {
      var out = keep ? new Uint8Array(n) : null, at = 0;
      while (at < n) {
        var chunk = chunks[0], use = Math.min(chunk.length, n - at);
        if (out) out.set(chunk.subarray(0, use), at);
        at += use;
        held -= use;
        if (use === chunk.length) chunks.shift();
        else chunks[0] = chunk.subarray(use);
      }
      return out;
    }
    function skip(n) {
      if (n <= 0) return Promise.resolve();
      var step = Math.min(n, 1 << 20);
      return fill(step).then(function (ok) {
        if (!ok) throw new Error("truncated");
        take(step, false);
        return skip(n - step);
      });
    }
    return {
      read: function (n) {
        return fill(n).then(function (ok) { return ok ? take(n, true) : new Uint8Array(0); });
      },
      skip: skip,
      close: function () { reader.cancel().catch(function () {}); },
    };
  }

  function text(bytes) { return new TextDecoder("utf-8").decode(bytes); }

  function field(header, start, length) {
    var end = header.indexOf(0, start);
    return text(header.subarray(start, end < 0 || end > start + length ? start + length : end));
  }

  function topLevel(name) {
    while (name.indexOf("./") === 0) name = name.slice(2);
    return name;
  }

  function walk(source) {
    var found = { dockerfile: null, manifests: {} }, seenDockerfile = false, nextName = null;
    function member() {
      return source.read(512).then(function (header) {
        if (header.length < 512 || header.every(function (b) { return b === 0; })) return found;
        if (!checksumOk(header)) throw new Error("not a tar");
        if (header[124] & 0x80) throw new Error("a member too large to read here");
        var size = parseInt(field(header, 124, 12).trim() || "0", 8);
        if (isNaN(size)) throw new Error("not a tar");
        var type = String.fromCharCode(header[156] || 48);
        var name = field(header, 0, 100);
        var posix = field(header, 257, 6) === "ustar" && header[262] === 0;
        if (posix && header[345]) name = field(header, 345, 155) + "/" + name;
        if (nextName !== null) { name = nextName; nextName = null; }
        var padded = Math.ceil(size / 512) * 512;
        name = topLevel(name);
        var wanted = type === "L" || type === "x" ||
          (type === "0" && MANIFESTS.indexOf(name) >= 0 && size <= MAX_MANIFEST_BYTES) ||
          (type === "0" && name === "Dockerfile" && !seenDockerfile && size <= MAX_DOCKERFILE_BYTES);
        if (type === "0" && name === "Dockerfile") seenDockerfile = true;
        if (!wanted) return source.skip(padded).then(member);
        return source.read(padded).then(function (data) {
          var body = data.subarray(0, size);
          if (type === "L") nextName = text(body).replace(/\0+$/, "");
          else if (type === "x") nextName = paxPath(text(body));
          else if (name === "Dockerfile") found.dockerfile = text(body);
          else found.manifests[name] = text(body);
          return member();
        });
      });
    }
    return member();
  }

  function checksumOk(header) {
    var sum = 0;
    for (var i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : header[i];
    return parseInt(field(header, 148, 8).trim(), 8) === sum;
  }

  function paxPath(records) {
    var match = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(records);
    return match ? match[1] : null;
  }

  function read(file) {
    return file.slice(0, 2).arrayBuffer().then(function (head) {
      var magic = new Uint8Array(head);
      if (magic[0] === 0x1f && magic[1] === 0x8b) {
        if (!window.DecompressionStream) return null;
        var source = streamSource(file.stream().pipeThrough(new DecompressionStream("gzip")));
        return walk(source).finally(source.close);
      }
      return walk(fileSource(file));
    }).catch(function () { return null; });
  }

  window.PodiumBuildContext = { read: read };
})();
