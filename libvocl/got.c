/*
 * got.c - points the other loaded objects' references to a function at
 * libvocl's own: see got.h.
 *
 * Every call an object makes into another library goes through a slot of
 * its global offset table, which the dynamic loader filled in with the
 * address it found; so does a function's address taken in a
 * position-independent object.  The loader's relocations say which slot
 * holds which symbol.  Rewriting those slots is how HPC tools (LLNL's
 * GOTCHA, for one) wrap a function in a process they did not start.
 *
 * Only what the loader itself reads is read here: the dynamic section of
 * each object, its symbol and string tables, and its relocations.
 */
#include "got.h"

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if __ELF_NATIVE_CLASS == 64
#define RELOC_SYM(info) ELF64_R_SYM(info)
#else
#define RELOC_SYM(info) ELF32_R_SYM(info)
#endif

struct redirect {
    const char *name;
    void *to;
    uintptr_t skip; /* an address in the one object left as it is */
    int slots;      /* slots rewritten */
    int failed;     /* slots that could not be written */
};

/* An address from a dynamic entry: glibc relocates them in place, other
 * loaders leave them relative to the object's base. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
    return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

/* The slot at addr gets to; in the object's RELRO part it is read-only by
 * now, and is made so again. */
static bool write_slot(const struct dl_phdr_info *info, uintptr_t addr, void *to)
{
    bool relro = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_GNU_RELRO && addr >= lo && addr < lo + ph->p_memsz)
            relro = true;
    }
    uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    void *page = (void *)(addr & ~(page_size - 1));
    if (relro && mprotect(page, page_size, PROT_READ | PROT_WRITE))
        return false;
    /* (another thread may call through the slot meanwhile: one store) */
    __atomic_store_n((void **)addr, to, __ATOMIC_RELEASE);
    if (relro)
        mprotect(page, page_size, PROT_READ);
    return true;
}

/* One relocation: rewritten if it names the function. */
static void consider(const struct dl_phdr_info *info, struct redirect *r, const ElfW(Sym) *symtab,
                     const char *strtab, ElfW(Addr) offset, uint64_t rinfo)
{
    size_t sym = RELOC_SYM(rinfo);
    if (sym == 0 || strcmp(strtab + symtab[sym].st_name, r->name) != 0)
        return;
    if (write_slot(info, info->dlpi_addr + offset, r->to))
        r->slots++;
    else
        r->failed++;
}

static void scan(const struct dl_phdr_info *info, struct redirect *r, const ElfW(Sym) *symtab,
                 const char *strtab, uintptr_t rel, size_t size, bool rela)
{
    if (!rel)
        return;
    if (rela)
        for (const ElfW(Rela) *p = (const void *)rel; (uintptr_t)(p + 1) <= rel + size; p++)
            consider(info, r, symtab, strtab, p->r_offset, p->r_info);
    else
        for (const ElfW(Rel) *p = (const void *)rel; (uintptr_t)(p + 1) <= rel + size; p++)
            consider(info, r, symtab, strtab, p->r_offset, p->r_info);
}

static int each_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct redirect *r = arg;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && r->skip >= lo && r->skip < lo + ph->p_memsz)
            return 0;
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const void *)lo;
    }
    if (!dyn)
        return 0; /* (a static executable: nothing to rewrite) */
    uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0, rel = 0;
    size_t pltrelsz = 0, relasz = 0, relsz = 0;
    bool plt_rela = true;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_STRTAB: strtab = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_JMPREL: jmprel = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
        case DT_PLTREL: plt_rela = dyn->d_un.d_val == DT_RELA; break;
        case DT_RELA: rela = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_RELASZ: relasz = dyn->d_un.d_val; break;
        case DT_REL: rel = dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_RELSZ: relsz = dyn->d_un.d_val; break;
        }
    }
    if (!symtab || !strtab)
        return 0;
    const ElfW(Sym) *syms = (const void *)symtab;
    const char *strs = (const char *)strtab;
    scan(info, r, syms, strs, jmprel, pltrelsz, plt_rela); /* calls through the PLT */
    scan(info, r, syms, strs, rela, relasz, true);          /* addresses taken */
    scan(info, r, syms, strs, rel, relsz, false);
    return 0;
}

int vocl_got_redirect(const char *name, void *to, const void *skip, int *failed)
{
    struct redirect r = {.name = name, .to = to, .skip = (uintptr_t)skip};
    dl_iterate_phdr(each_object, &r);
    if (failed)
        *failed = r.failed;
    return r.slots;
}
