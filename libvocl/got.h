/*
 * got.h - points the other loaded objects' references to a function at
 * libvocl's own.
 *
 * Loaded as an OpenCL ICD, libvocl comes into the process after the
 * application and its MPI, with RTLD_LOCAL: the application's calls of
 * MPI_Finalize go straight to MPI, never through libvocl's.  libvocl must
 * take its leave before MPI_Finalize begins, though (init.c says why), so
 * it rewrites the slots those calls go through.
 */
#ifndef VOCL_GOT_H
#define VOCL_GOT_H

/* Rewrites every slot that a loaded object (but the one holding the
 * address skip) has for the function name, to hold to.  Returns how many
 * were rewritten; *failed (if given), how many could not be.  Objects
 * loaded later, and calls through pointers taken before, are not reached. */
int vocl_got_redirect(const char *name, void *to, const void *skip, int *failed);

#endif
