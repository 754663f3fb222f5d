//! `cargo run -- PROTO OUT_DIR`: the client side of the proto's service, messages included.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, proto, out] = args.as_slice() else {
        eprintln!("usage: seamcut-milvus-protos PROTO OUT_DIR");
        std::process::exit(2);
    };
    let dir = std::path::Path::new(proto).parent().and_then(std::path::Path::to_str).expect("the proto's folder");
    tonic_prost_build::configure()
        .build_server(false)
        .build_transport(true)
        .out_dir(out)
        .compile_protos(&[proto.as_str()], &[dir])
        .unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        });
}
