# env.sh - sourced by run.sh and bw.sh, with $out set: LIBS (a folder of
# libraries and bin/ of programs, such as Debian's MPICH, UCX and ocl-icd,
# for a machine without them) and GPU_ICD (a vendor library, made the only
# ICD of the runs) into the environment.
if [ -n "${LIBS:-}" ]; then
    export PATH=$LIBS/bin:$PATH LD_LIBRARY_PATH=$LIBS/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [ -n "${GPU_ICD:-}" ]; then
    mkdir -p "$out/vendors"
    echo "$GPU_ICD" > "$out/vendors/gpu.icd"
    export OCL_ICD_VENDORS=$out/vendors
fi
