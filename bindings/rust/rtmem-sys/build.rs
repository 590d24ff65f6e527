//! Finds or builds librtmem (README.md gives the order), and compiles the
//! layout probe the tests compare the Rust structs with.
use std::env;
use std::path::{Path, PathBuf};

fn tree() -> Option<PathBuf> {
    if let Ok(dir) = env::var("RTMEM_SOURCE_DIR") {
        return Some(PathBuf::from(dir));
    }
    let here = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let top = here.join("../../..");
    if top.join("include/rtmem/heap.h").exists() && top.join("CMakeLists.txt").exists() {
        Some(top.canonicalize().unwrap_or(top))
    } else {
        None
    }
}

fn include_dir(found: Option<&Path>) -> Option<PathBuf> {
    found.map(|t| t.join("include"))
}

fn main() {
    println!("cargo:rerun-if-env-changed=RTMEM_LIB_DIR");
    println!("cargo:rerun-if-env-changed=RTMEM_SOURCE_DIR");
    println!("cargo:rerun-if-env-changed=RTMEM_SYS_PKG_CONFIG");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=layout.c");
    let src = tree();
    let include: Option<PathBuf>;

    if let Ok(dir) = env::var("RTMEM_LIB_DIR") {
        println!("cargo:rerun-if-changed={}/librtmem.a", dir);
        println!("cargo:rustc-link-search=native={}", dir);
        println!("cargo:rustc-link-lib=static=rtmem");
        include = include_dir(src.as_deref());
    } else if let (Some(top), false) = (src.as_ref(), env::var("RTMEM_SYS_PKG_CONFIG").is_ok()) {
        for part in ["src", "include", "CMakeLists.txt"] {
            println!("cargo:rerun-if-changed={}", top.join(part).display());
        }
        let out = cmake::Config::new(top)
            .define("RTMEM_BUILD_TESTS", "OFF")
            .define("RTMEM_BUILD_TOOLS", "OFF")
            .define("RTMEM_WERROR", "OFF")
            .define("CMAKE_BUILD_TYPE", "Release")
            .build_target("rtmem_static")
            .build();
        println!(
            "cargo:rustc-link-search=native={}",
            out.join("build").display()
        );
        println!("cargo:rustc-link-lib=static=rtmem");
        include = Some(top.join("include"));
    } else {
        let lib = pkg_config::Config::new()
            .statik(true)
            .probe("rtmem")
            .unwrap_or_else(|e| {
                panic!(
                    "rtmem-sys: no librtmem: set RTMEM_LIB_DIR, build inside rtmem's source \
                     tree, or install rtmem (pkg-config rtmem): {}",
                    e
                )
            });
        // pkg-config leaves out the system's own include directory.
        include = lib.include_paths.first().cloned().or_else(|| {
            ["/usr/include", "/usr/local/include"]
                .iter()
                .map(PathBuf::from)
                .find(|d| d.join("rtmem/heap.h").exists())
        });
    }
    println!("cargo:rustc-link-lib=pthread");

    // The C side of the layout test: sizeof and offsetof of every struct
    // the bindings declare, from the headers the library was built with.
    if let Some(inc) = include {
        println!("cargo:include={}", inc.display());
        cc::Build::new()
            .file("layout.c")
            .include(&inc)
            .compile("rtmem_sys_layout");
        println!("cargo:rustc-cfg=rtmem_layout_probe");
    } else {
        println!("cargo:warning=rtmem-sys: no C headers found: the layout test is left out");
    }
    println!("cargo:rustc-check-cfg=cfg(rtmem_layout_probe)");
}
