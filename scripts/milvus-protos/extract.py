#!/usr/bin/env python3
"""Write src/db/milvus/milvus.proto: the part of Milvus's published protos that seamcut's
Milvus output speaks, taken from pymilvus's compiled descriptors (pymilvus ships Milvus's
protos compiled, not as .proto files).

Only the methods and fields seamcut sends or reads are kept, each with its number and type
as Milvus defines it, so the trimmed file is wire-compatible with the server: a field left
out of a reply is skipped by the decoder, and nothing left out is ever sent. Every message
goes into one file of the service's package (`milvus.proto.milvus`), which fixes the gRPC
paths (`/milvus.proto.milvus.MilvusService/Upsert`); a message's package is not on the wire.

    .venv-milvus/bin/python scripts/milvus-protos/extract.py   # then scripts/milvus-protos/gen.sh
"""
import sys
from pathlib import Path

import pymilvus
from google.protobuf import descriptor
from pymilvus.grpc_gen import milvus_pb2

# The service's methods seamcut calls.
METHODS = [
    "CreateCollection", "DescribeCollection", "HasCollection", "AlterCollection",
    "Upsert", "Delete", "Query", "CreateIndex", "DescribeIndex", "DropIndex",
    "LoadCollection", "ReleaseCollection", "GetLoadState",
]
# The fields kept of each message (every message a kept field or method names must be here).
FIELDS = {
    "Status": ["error_code", "reason", "code", "retriable", "detail"],
    "KeyValuePair": ["key", "value"],
    "CollectionSchema": ["name", "description", "fields", "enable_dynamic_field"],
    "FieldSchema": ["name", "is_primary_key", "description", "data_type", "type_params", "autoID", "nullable"],
    "FieldData": ["type", "field_name", "scalars", "vectors", "field_id", "valid_data"],
    "ScalarField": ["long_data", "string_data"],
    "LongArray": ["data"],
    "StringArray": ["data"],
    "VectorField": ["dim", "float_vector"],
    "FloatArray": ["data"],
    "IDs": ["int_id", "str_id"],
    "CreateCollectionRequest": ["db_name", "collection_name", "schema", "shards_num", "consistency_level", "properties"],
    "DescribeCollectionRequest": ["db_name", "collection_name"],
    "DescribeCollectionResponse": ["status", "schema", "collectionID", "collection_name", "properties"],
    "HasCollectionRequest": ["db_name", "collection_name"],
    "BoolResponse": ["status", "value"],
    "AlterCollectionRequest": ["db_name", "collection_name", "properties", "delete_keys"],
    "UpsertRequest": ["db_name", "collection_name", "fields_data", "num_rows"],
    "DeleteRequest": ["db_name", "collection_name", "expr", "consistency_level"],
    "MutationResult": ["status", "IDs", "delete_cnt", "upsert_cnt"],
    "QueryRequest": ["db_name", "collection_name", "expr", "output_fields", "query_params", "consistency_level"],
    "QueryResults": ["status", "fields_data", "output_fields"],
    "CreateIndexRequest": ["db_name", "collection_name", "field_name", "extra_params", "index_name"],
    "DescribeIndexRequest": ["db_name", "collection_name", "field_name", "index_name"],
    "DescribeIndexResponse": ["status", "index_descriptions"],
    "IndexDescription": ["index_name", "params", "field_name", "state"],
    "DropIndexRequest": ["db_name", "collection_name", "field_name", "index_name"],
    "LoadCollectionRequest": ["db_name", "collection_name"],
    "ReleaseCollectionRequest": ["db_name", "collection_name"],
    "GetLoadStateRequest": ["db_name", "collection_name"],
    "GetLoadStateResponse": ["status", "state"],
}
# Enums kept by name; a field of any other enum is sent and read as its number (int32).
ENUMS = ["DataType", "ConsistencyLevel", "LoadState"]

SCALARS = {
    descriptor.FieldDescriptor.TYPE_DOUBLE: "double", descriptor.FieldDescriptor.TYPE_FLOAT: "float",
    descriptor.FieldDescriptor.TYPE_INT64: "int64", descriptor.FieldDescriptor.TYPE_UINT64: "uint64",
    descriptor.FieldDescriptor.TYPE_INT32: "int32", descriptor.FieldDescriptor.TYPE_BOOL: "bool",
    descriptor.FieldDescriptor.TYPE_STRING: "string", descriptor.FieldDescriptor.TYPE_BYTES: "bytes",
    descriptor.FieldDescriptor.TYPE_UINT32: "uint32", descriptor.FieldDescriptor.TYPE_SINT32: "sint32",
    descriptor.FieldDescriptor.TYPE_SINT64: "sint64", descriptor.FieldDescriptor.TYPE_FIXED32: "fixed32",
    descriptor.FieldDescriptor.TYPE_FIXED64: "fixed64",
}


def messages():
    """Every top-level message and enum of Milvus's files, by short name (a kept name must be
    defined once)."""
    found, enums, twice = {}, {}, set()
    # The service's own file and the two whose types its messages carry (msg.proto has other
    # messages of the same names, for Milvus's internal queues).
    files = [milvus_pb2.DESCRIPTOR] + [
        f for f in milvus_pb2.DESCRIPTOR.dependencies if f.name in ("common.proto", "schema.proto")
    ]
    for f in files:
        for name, m in f.message_types_by_name.items():
            if name in found:
                twice.add(name)
            found[name] = m
        for name, e in f.enum_types_by_name.items():
            enums[name] = e
    assert not twice & set(FIELDS), twice & set(FIELDS)
    return found, enums


def field_type(f):
    if f.type == descriptor.FieldDescriptor.TYPE_MESSAGE:
        name = f.message_type.name
        assert f.message_type.containing_type is None, f"{f.full_name}: a nested type"
        assert name in FIELDS, f"{f.full_name} names {name}: add it to FIELDS"
        return name
    if f.type == descriptor.FieldDescriptor.TYPE_ENUM:
        return f.enum_type.name if f.enum_type.name in ENUMS else "int32"
    return SCALARS[f.type]


def repeated(f):
    if hasattr(f, "is_repeated"):
        return f.is_repeated
    return f.label == descriptor.FieldDescriptor.LABEL_REPEATED


def message(name, m):
    keep = FIELDS[name]
    fields = {f.name: f for f in m.fields}
    missing = [k for k in keep if k not in fields]
    assert not missing, f"{name}: no fields {missing}"
    lines = [f"message {name} {{"]
    oneofs = {}
    for f in m.fields:
        if f.name not in keep:
            continue
        o = f.containing_oneof
        # A proto3 `optional` field is a oneof of its own, named after it.
        synthetic = o is not None and len(o.fields) == 1 and o.name == "_" + f.name
        if o is not None and not synthetic:
            oneofs.setdefault(o.name, []).append(f)
            continue
        label = "repeated " if repeated(f) else ""
        if o is not None:
            label = "optional "
        lines.append(f"  {label}{field_type(f)} {f.name} = {f.number};")
    for o, fs in oneofs.items():
        lines.append(f"  oneof {o} {{")
        lines += [f"    {field_type(f)} {f.name} = {f.number};" for f in fs]
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def enum(e):
    lines = [f"enum {e.name} {{"] + [f"  {v.name} = {v.number};" for v in e.values] + ["}"]
    return "\n".join(lines)


def main():
    found, enums = messages()
    service = milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"]
    out = [
        "// Generated by scripts/milvus-protos/extract.py from pymilvus "
        f"{pymilvus.__version__}'s compiled protos: do not edit.",
        "// The part of Milvus's MilvusService, and of the messages it takes, that seamcut's Milvus",
        "// output uses; numbers and types as Milvus defines them.",
        'syntax = "proto3";',
        "package milvus.proto.milvus;",
        "",
        "service MilvusService {",
    ]
    for name in METHODS:
        method = service.methods_by_name[name]
        i, o = method.input_type.name, method.output_type.name
        assert i in FIELDS and o in FIELDS, f"{name}: {i} -> {o}"
        out.append(f"  rpc {name}({i}) returns ({o}) {{}}")
    out.append("}")
    for name in FIELDS:
        out += ["", message(name, found[name])]
    for name in ENUMS:
        out += ["", enum(enums[name])]
    path = Path(__file__).resolve().parents[2] / "src/db/milvus/milvus.proto"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n")
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
