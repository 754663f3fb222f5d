"""One object of an R package's lazy-loaded data (DIR/Rdata.rdx and DIR/Rdata.rdb), for the
broad benchmark's texts that ship inside R packages (benches/broad/texts/fiction-*.sh): just
enough of R's XDR serialization to read the index and a character vector, standard library
only. One copy for the scripts, which each carried it.
"""
import gzip
import struct
import sys
import zlib


class Unserialize:
    """Just enough of R's XDR serialization format (version 2 or 3) for a lazy-load index and a
    character vector."""

    def __init__(self, data, who):
        self.b, self.p, self.refs, self.who = data, 0, [], who

    def int(self):
        v = struct.unpack_from(">i", self.b, self.p)[0]
        self.p += 4
        return v

    def length(self):
        v = self.int()
        if v == -1:
            hi, lo = self.int(), self.int()
            v = (hi << 32) + lo
        return v

    def top(self):
        if self.b[:2] != b"X\n":
            sys.exit(f"{self.who}: not an XDR R serialization")
        self.p = 2
        version = self.int()
        self.int(), self.int()
        if version == 3:
            n = self.int()  # then the native encoding's name
            self.p += n
        return self.item()

    def item(self):
        flags = self.int()
        kind = flags & 0xFF
        has_attr, has_tag = flags & (1 << 9), flags & (1 << 10)
        if kind == 254:  # NILVALUE
            return None
        if kind in (253, 252, 251, 250, 242, 241):  # environments and markers
            return ("special", kind)
        if kind == 255:  # REFSXP
            k = flags >> 8 or self.int()
            return self.refs[k - 1]
        if kind in (249, 248, 247):  # namespace, package, persistent
            self.int()
            v = ("persist", [self.item() for _ in range(self.int())])
            self.refs.append(v)
            return v
        if kind == 1:  # SYMSXP
            v = ("sym", self.item())
            self.refs.append(v)
            return v
        if kind in (2, 3, 5, 6, 17, 239, 240):  # pairlists and the like
            attr = self.item() if has_attr else None
            tag = self.item() if has_tag else None
            car = self.item()
            cdr = self.item()
            cells = [(tag, car)] + (cdr[1] if isinstance(cdr, list) else [])
            return ["pairlist", cells, attr]
        if kind == 4:  # ENVSXP
            env = {}
            self.refs.append(env)
            self.int()
            for key in ("enclos", "frame", "hashtab", "attrib"):
                env[key] = self.item()
            return env
        if kind == 9:  # CHARSXP
            n = self.int()
            if n == -1:
                return None
            raw = self.b[self.p:self.p + n]
            self.p += n
            return raw.decode("latin-1" if (flags >> 12) & 4 else "utf-8")
        if kind in (10, 13):
            n = self.length()
            v = list(struct.unpack_from(">%di" % n, self.b, self.p))
            self.p += 4 * n
        elif kind == 14:
            n = self.length()
            v = list(struct.unpack_from(">%dd" % n, self.b, self.p))
            self.p += 8 * n
        elif kind in (16, 19, 20):  # STRSXP, VECSXP, EXPRSXP
            v = [self.item() for _ in range(self.length())]
        elif kind == 24:
            n = self.length()
            v = self.b[self.p:self.p + n]
            self.p += n
        else:
            sys.exit(f"{self.who}: unsupported R type {kind}")
        if has_attr:
            return ("attr", v, self.item())
        return v


def with_names(x):
    if isinstance(x, tuple) and x[0] == "attr":
        for tag, value in x[2][1]:
            if tag == ("sym", "names"):
                return x[1], value
        return x[1], None
    return x, None


def read_object(data_dir, name, who):
    """The R object `name` of the package data in `data_dir`, with its names attribute dropped;
    `who` names the text in an error."""
    index, keys = with_names(Unserialize(gzip.open(data_dir + "/Rdata.rdx").read(), who).top())
    variables, names = with_names(index[keys.index("variables")])
    offset, size = variables[names.index(name)]
    with open(data_dir + "/Rdata.rdb", "rb") as f:
        f.seek(offset)
        blob = f.read(size)
    return with_names(Unserialize(zlib.decompress(blob[4:]), who).top())[0]
