/*
 * tth.cl: the propositions of hep-tth, a synthetic ttH-like selection.
 * This one file is OpenCL C for the devices (hep(3) defines HEP_PARAMS,
 * HEP_ARGS and HEP_RANDOM before it) and C for the CPU reference (hep-tth.c
 * defines them over host arrays), so both run the same arithmetic: only +,
 * -, *, / and sqrt in double, which IEEE 754 and OpenCL round the same way,
 * and no contraction into fma (FP_CONTRACT OFF, -ffp-contract=off).
 *
 * Momenta in GeV.  Each proposition returns nonzero to keep event e.
 */
#define TTH_MAXL    4
#define TTH_MAXJ    10
#define TTH_SAMPLES 128  /* smearings of the kinematic reconstruction */
#define TTH_MET_SAMPLES 16
#define TTH_RNG_MET TTH_SAMPLES /* first word of met_smear's */
#define TTH_BTAG    0.7
#define TTH_SINH2   36.6 /* sinh(2.5)^2: |eta| < 2.5 is pz^2 < 36.6 pt^2 */

HEP_INLINE double tth_mass2(double e, double px, double py, double pz)
{
    return e * e - px * px - py * py - pz * pz;
}

HEP_INLINE double tth_mass(double e, double px, double py, double pz)
{
    double m2 = tth_mass2(e, px, py, pz);
    return m2 > 0.0 ? sqrt(m2) : 0.0;
}

HEP_INLINE double tth_jet_pt2(HEP_PARAMS, uint e, int j)
{
    double px = jet_px[e * TTH_MAXJ + j], py = jet_py[e * TTH_MAXJ + j];
    return px * px + py * py;
}

HEP_INLINE double tth_lep_pt2(HEP_PARAMS, uint e, int l)
{
    double px = lep_px[e * TTH_MAXL + l], py = lep_py[e * TTH_MAXL + l];
    return px * px + py * py;
}

HEP_INLINE int tth_nj(HEP_PARAMS, uint e)
{
    int n = n_jet[e];
    return n < 0 ? 0 : n > TTH_MAXJ ? TTH_MAXJ : n;
}

HEP_INLINE int tth_nl(HEP_PARAMS, uint e)
{
    int n = n_lep[e];
    return n < 0 ? 0 : n > TTH_MAXL ? TTH_MAXL : n;
}

/* Jets above 25 GeV (b-tagged ones only when btag). */
HEP_INLINE int tth_count_jets(HEP_PARAMS, uint e, int btag)
{
    int n = 0;
    for (int j = 0; j < tth_nj(HEP_ARGS, e); j++)
        if (tth_jet_pt2(HEP_ARGS, e, j) > 625.0 &&
            (!btag || jet_btag[e * TTH_MAXJ + j] > TTH_BTAG))
            n++;
    return n;
}

/* The index of the first lepton above 25 GeV, or -1 unless there is just one. */
HEP_INLINE int tth_the_lepton(HEP_PARAMS, uint e)
{
    int found = -1, n = 0;
    for (int l = 0; l < tth_nl(HEP_ARGS, e); l++)
        if (tth_lep_pt2(HEP_ARGS, e, l) > 625.0) {
            found = found < 0 ? l : found;
            n++;
        }
    return n == 1 ? found : -1;
}

int tth_one_lepton(HEP_PARAMS, uint e)
{
    return tth_the_lepton(HEP_ARGS, e) >= 0;
}

int tth_lep_central(HEP_PARAMS, uint e)
{
    int l = tth_the_lepton(HEP_ARGS, e);
    double pz = lep_pz[e * TTH_MAXL + l];
    return pz * pz < TTH_SINH2 * tth_lep_pt2(HEP_ARGS, e, l);
}

int tth_lepton_veto(HEP_PARAMS, uint e)
{
    int n = 0;
    for (int l = 0; l < tth_nl(HEP_ARGS, e); l++)
        n += tth_lep_pt2(HEP_ARGS, e, l) > 100.0;
    return n <= 1;
}

int tth_four_jets(HEP_PARAMS, uint e)
{
    return tth_count_jets(HEP_ARGS, e, 0) >= 4;
}

int tth_six_jets(HEP_PARAMS, uint e)
{
    return tth_count_jets(HEP_ARGS, e, 0) >= 6;
}

int tth_two_btags(HEP_PARAMS, uint e)
{
    return tth_count_jets(HEP_ARGS, e, 1) >= 2;
}

int tth_three_btags(HEP_PARAMS, uint e)
{
    return tth_count_jets(HEP_ARGS, e, 1) >= 3;
}

int tth_met(HEP_PARAMS, uint e)
{
    double mx = met[2 * e], my = met[2 * e + 1];
    return mx * mx + my * my > 400.0;
}

/* Transverse mass of the lepton and the missing momentum above 30 GeV. */
int tth_mtw(HEP_PARAMS, uint e)
{
    int l = tth_the_lepton(HEP_ARGS, e);
    double mx = met[2 * e], my = met[2 * e + 1];
    double lx = lep_px[e * TTH_MAXL + l], ly = lep_py[e * TTH_MAXL + l];
    double mt2 = 2.0 * (sqrt(lx * lx + ly * ly) * sqrt(mx * mx + my * my) - lx * mx - ly * my);
    return mt2 > 900.0;
}

int tth_ht(HEP_PARAMS, uint e)
{
    double sum = 0.0;
    for (int j = 0; j < tth_nj(HEP_ARGS, e); j++) {
        double pt2 = tth_jet_pt2(HEP_ARGS, e, j);
        if (pt2 > 625.0)
            sum += sqrt(pt2);
    }
    ht[e] = sum;
    return sum > 300.0;
}

int tth_jets_central(HEP_PARAMS, uint e)
{
    for (int j = 0; j < 4; j++) {
        double pz = jet_pz[e * TTH_MAXJ + j];
        if (!(pz * pz < TTH_SINH2 * tth_jet_pt2(HEP_ARGS, e, j)))
            return 0;
    }
    return 1;
}

int tth_trigger(HEP_PARAMS, uint e)
{
    return (trigger[e] & 1) != 0;
}

/* Mass of the two leading b-tagged jets within 30..400 GeV. */
int tth_bb_mass(HEP_PARAMS, uint e)
{
    int a = -1, b = -1;
    for (int j = 0; j < tth_nj(HEP_ARGS, e) && b < 0; j++)
        if (jet_btag[e * TTH_MAXJ + j] > TTH_BTAG && tth_jet_pt2(HEP_ARGS, e, j) > 625.0) {
            if (a < 0)
                a = j;
            else
                b = j;
        }
    size_t ia = e * TTH_MAXJ + a, ib = e * TTH_MAXJ + b;
    double m = tth_mass((double)jet_e[ia] + jet_e[ib], (double)jet_px[ia] + jet_px[ib],
                        (double)jet_py[ia] + jet_py[ib], (double)jet_pz[ia] + jet_pz[ib]);
    m_bb[e] = m;
    return m > 30.0 && m < 400.0;
}

/* The three-jet mass (of the first eight jets) nearest the top mass. */
int tth_top_had(HEP_PARAMS, uint e)
{
    int n = tth_nj(HEP_ARGS, e);
    n = n > 8 ? 8 : n;
    double best = 1e30, mbest = 0.0;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            for (int c = b + 1; c < n; c++) {
                size_t ia = e * TTH_MAXJ + a, ib = e * TTH_MAXJ + b, ic = e * TTH_MAXJ + c;
                double m = tth_mass((double)jet_e[ia] + jet_e[ib] + jet_e[ic],
                                    (double)jet_px[ia] + jet_px[ib] + jet_px[ic],
                                    (double)jet_py[ia] + jet_py[ib] + jet_py[ic],
                                    (double)jet_pz[ia] + jet_pz[ib] + jet_pz[ic]);
                double d = m > 172.5 ? m - 172.5 : 172.5 - m;
                if (d < best)
                    best = d, mbest = m;
            }
    m_top[e] = mbest;
    return best < 40.0;
}

/* The heavy one: the ttH hypothesis fitted to the six leading jets,
 * TTH_SAMPLES times with jet energies smeared by up to +-5 % (five bits of
 * random word s of the event per jet), keeping the best chi2 over every
 * assignment: a hadronic W from a jet pair, a hadronic top with a third jet,
 * a leptonic top from the lepton, the missing momentum (as a neutrino
 * without pz) and a fourth jet (b-tags preferred for both tops), and the
 * Higgs from the two leading jets left over. */
int tth_kin_reco(HEP_PARAMS, uint e)
{
    int n = tth_nj(HEP_ARGS, e);
    n = n > 6 ? 6 : n;
    int l = tth_the_lepton(HEP_ARGS, e);
    double lx = lep_px[e * TTH_MAXL + l], ly = lep_py[e * TTH_MAXL + l];
    double lz = lep_pz[e * TTH_MAXL + l], le = lep_e[e * TTH_MAXL + l];
    double nx = met[2 * e], ny = met[2 * e + 1];
    double ve = le + sqrt(nx * nx + ny * ny), vx = lx + nx, vy = ly + ny;
    double best = 1e30, mh_best = 0.0;
    for (int s = 0; s < TTH_SAMPLES; s++) {
        double je[6], jx[6], jy[6], jz[6];
        uint word = HEP_RANDOM(e, s);
        for (int j = 0; j < n; j++) {
            size_t i = e * TTH_MAXJ + j;
            double f = 1.0 + 0.1 * ((double)(word >> (5 * j) & 31u) / 32.0 - 0.484375);
            je[j] = f * jet_e[i], jx[j] = f * jet_px[i];
            jy[j] = f * jet_py[i], jz[j] = f * jet_pz[i];
        }
        for (int t = 0; t < n; t++) {
            double bt = jet_btag[e * TTH_MAXJ + t] > TTH_BTAG ? 0.0 : 4.0;
            for (int a = 0; a < n; a++)
                for (int b = a + 1; b < n; b++) {
                    if (a == t || b == t)
                        continue;
                    double we = je[a] + je[b], wx = jx[a] + jx[b], wy = jy[a] + jy[b],
                           wz = jz[a] + jz[b];
                    double mw = tth_mass(we, wx, wy, wz);
                    double mt = tth_mass(we + je[t], wx + jx[t], wy + jy[t], wz + jz[t]);
                    double had = (mw - 80.4) * (mw - 80.4) / 100.0 +
                                 (mt - 172.5) * (mt - 172.5) / 225.0 + bt;
                    for (int q = 0; q < n; q++) {
                        if (q == t || q == a || q == b)
                            continue;
                        double ml = tth_mass(ve + je[q], vx + jx[q], vy + jy[q], lz + jz[q]);
                        double chi2 = had + (ml - 172.5) * (ml - 172.5) / 400.0;
                        if (!(jet_btag[e * TTH_MAXJ + q] > TTH_BTAG))
                            chi2 += 4.0;
                        if (!(chi2 < best))
                            continue;
                        int h1 = -1, h2 = -1;
                        for (int j = 0; j < n && h2 < 0; j++)
                            if (j != t && j != a && j != b && j != q) {
                                if (h1 < 0)
                                    h1 = j;
                                else
                                    h2 = j;
                            }
                        best = chi2;
                        mh_best = h2 < 0 ? 0.0
                                         : tth_mass(je[h1] + je[h2], jx[h1] + jx[h2],
                                                    jy[h1] + jy[h2], jz[h1] + jz[h2]);
                    }
                }
        }
    }
    reco_chi2[e] = best;
    m_higgs[e] = mh_best;
    return best < 40.0;
}

int tth_higgs_window(HEP_PARAMS, uint e)
{
    return m_higgs[e] > 60.0 && m_higgs[e] < 200.0;
}

int tth_reco_quality(HEP_PARAMS, uint e)
{
    return reco_chi2[e] < 12.0;
}

/* Missing momentum that stays above 30 GeV in at least half of
 * TTH_MET_SAMPLES smearings by up to +-20 % per axis. */
int tth_met_smear(HEP_PARAMS, uint e)
{
    int above = 0;
    for (int s = 0; s < TTH_MET_SAMPLES; s++) {
        double fx = 1.0 + 0.4 * (hep_unit(HEP_RANDOM(e, TTH_RNG_MET + 2 * s)) - 0.5);
        double fy = 1.0 + 0.4 * (hep_unit(HEP_RANDOM(e, TTH_RNG_MET + 2 * s + 1)) - 0.5);
        double mx = fx * met[2 * e], my = fy * met[2 * e + 1];
        above += mx * mx + my * my > 900.0;
    }
    return 2 * above >= TTH_MET_SAMPLES;
}

/* ---- hep-tth --analysis heavy: two heavy cuts more ----
 * Both cost the same for every event (a fixed number of samples, padded
 * jets included): written first, they run on every event; run last, on the
 * few that the cheap, selective cuts keep.  Both keep almost every event
 * (upper cuts: against mismeasured events), yet each drops some events
 * that the other propositions select, so that a wrong one changes the
 * selection.  Their
 * smearings come from a linear congruential generator seeded by one random
 * word of the event: integer arithmetic, the same bits on both sides. */
#define TTH_SIG_SAMPLES  16384
#define TTH_HT_SAMPLES   2048

HEP_INLINE uint tth_lcg(uint x)
{
    return x * 1664525u + 1013904223u;
}

/* Missing momentum below 120 GeV (not mismeasured) in at least half of
 * TTH_SIG_SAMPLES smearings by up to +-30 % per axis. */
int tth_met_sig(HEP_PARAMS, uint e)
{
    double mx0 = met[2 * e], my0 = met[2 * e + 1];
    uint x = HEP_RANDOM(e, 1);
    int above = 0;
    for (int s = 0; s < TTH_SIG_SAMPLES; s++) {
        x = tth_lcg(x);
        double fx = 0.7 + 0.6 * hep_unit(x);
        x = tth_lcg(x);
        double fy = 0.7 + 0.6 * hep_unit(x);
        double mx = fx * mx0, my = fy * my0;
        above += mx * mx + my * my < 14400.0;
    }
    return 2 * above >= TTH_SIG_SAMPLES;
}

/* The scalar sum of jet momenta (jets above 25 GeV) below 600 GeV in at
 * least half of TTH_HT_SAMPLES smearings of every jet by up to +-10 %. */
int tth_ht_smear(HEP_PARAMS, uint e)
{
    uint x = HEP_RANDOM(e, 2);
    int above = 0;
    for (int s = 0; s < TTH_HT_SAMPLES; s++) {
        double sum = 0.0;
        for (int j = 0; j < TTH_MAXJ; j++) {
            x = tth_lcg(x);
            double f = 0.9 + 0.2 * hep_unit(x);
            double pt2 = f * f * tth_jet_pt2(HEP_ARGS, e, j);
            if (pt2 > 625.0)
                sum += sqrt(pt2);
        }
        above += sum < 600.0;
    }
    return 2 * above >= TTH_HT_SAMPLES;
}
