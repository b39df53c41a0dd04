-- cli_filter.lua - VOCL's Slurm command-line filter (vocl-slurm(8)):
-- sbatch/salloc/srun --vocl-gpus=N (an option of spank_vocl.so) becomes
-- the licence request -L vgpu:N, which slurmctld counts against
-- Licenses=vgpu:TOTAL in slurm.conf: a job starts only when N are free.
-- (A SPANK plugin cannot add a licence to a job itself.)  Installed as
-- cli_filter.lua next to slurm.conf, with CliFilterPlugins=cli_filter/lua.
-- A site that has a cli_filter.lua already copies vocl_gpus() into it
-- and calls it from its slurm_cli_pre_submit.

local LICENSE = "vgpu"

local function vocl_gpus(options)
    -- (Slurm 22.05 gives SPANK options as options.spank[PLUGIN][OPTION].)
    local n = nil
    local spank = options["spank"]
    if type(spank) == "table" and type(spank["vocl"]) == "table" then
        n = spank["vocl"]["vocl-gpus"]
    end
    local lic = options["licenses"]
    if lic == nil then lic = "" end
    local has = string.find("," .. lic .. ",", "," .. LICENSE .. "[:,]") ~= nil
    if n == nil or n == "" then
        if has then
            slurm.log_error("ask for virtual GPUs with --vocl-gpus=N, not -L %s " ..
                            "(the job would get no devices)", LICENSE)
            return slurm.ERROR
        end
        return slurm.SUCCESS
    end
    local count = tonumber(n)
    if count == nil or count < 1 or count ~= math.floor(count) then
        slurm.log_error("--vocl-gpus=%s: give a number of virtual GPUs, 1 or more", n)
        return slurm.ERROR
    end
    if has then
        slurm.log_error("--vocl-gpus=%s with -L %s: give --vocl-gpus alone", n, LICENSE)
        return slurm.ERROR
    end
    if lic ~= "" then lic = lic .. "," end
    options["licenses"] = lic .. LICENSE .. ":" .. string.format("%d", count)
    return slurm.SUCCESS
end

function slurm_cli_setup_defaults(options, early_pass)
    return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
    return vocl_gpus(options)
end

function slurm_cli_post_submit(offset, job_id, step_id)
    return slurm.SUCCESS
end
