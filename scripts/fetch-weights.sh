#!/bin/sh
# Downloads real pretrained ViT-B/16 weights into data/models/ (git-ignored):
#
#   data/models/google-vit-base-patch16-224/            Hugging Face google/vit-base-patch16-224
#       model.safetensors, config.json                  (ImageNet-21k pretrained, 1k fine-tuned)
#   data/models/timm-vit_base_patch16_224.augreg2_in21k_ft_in1k/
#       model.safetensors                               timm's augreg2 ViT-B/16
#
# Resumable: run it again after an interruption and curl continues where it
# stopped (partial files end in .part until complete). About 350 MB each.
#
#   scripts/fetch-weights.sh            both models
#   scripts/fetch-weights.sh hf         only google/vit-base-patch16-224
#   scripts/fetch-weights.sh timm       only the timm model
#
# Then, for example:
#   build/vit classify --weights data/models/google-vit-base-patch16-224/model.safetensors photo.jpg
set -eu

cd "$(dirname "$0")/.."
BASE="${HF_ENDPOINT:-https://huggingface.co}"
MODELS=data/models

if ! command -v curl >/dev/null 2>&1; then
    echo "fetch-weights: curl is needed: scripts/deps.sh curl (or apt-get install curl)" >&2
    exit 1
fi

# fetch REPO FILE DIR: download $BASE/REPO/resolve/main/FILE to DIR/FILE, resuming.
fetch() {
    repo=$1 file=$2 dir=$3
    dest="$dir/$file"
    if [ -s "$dest" ]; then
        echo "fetch-weights: $dest is already here"
        return 0
    fi
    mkdir -p "$dir"
    echo "fetch-weights: $repo/$file -> $dest"
    # -C -: continue a partial download; -f: fail on HTTP errors instead of saving the page
    if ! curl -fL --retry 3 --connect-timeout 20 -C - -o "$dest.part" "$BASE/$repo/resolve/main/$file"; then
        echo "fetch-weights: could not download $BASE/$repo/resolve/main/$file" >&2
        echo "fetch-weights: (no network? behind a proxy? run again to resume; the partial file is $dest.part)" >&2
        exit 1
    fi
    mv "$dest.part" "$dest"
    echo "fetch-weights: $dest ($(du -h "$dest" | cut -f1))"
}

want=${1:-all}
case "$want" in
    all|hf|timm) ;;
    *) echo "usage: scripts/fetch-weights.sh [all|hf|timm]" >&2; exit 2 ;;
esac

if [ "$want" = all ] || [ "$want" = hf ]; then
    fetch google/vit-base-patch16-224 config.json "$MODELS/google-vit-base-patch16-224"
    fetch google/vit-base-patch16-224 model.safetensors "$MODELS/google-vit-base-patch16-224"
fi
if [ "$want" = all ] || [ "$want" = timm ]; then
    fetch timm/vit_base_patch16_224.augreg2_in21k_ft_in1k model.safetensors \
        "$MODELS/timm-vit_base_patch16_224.augreg2_in21k_ft_in1k"
fi

if [ -x build/vit ]; then
    for w in "$MODELS"/*/model.safetensors; do
        [ -f "$w" ] && build/vit info --weights "$w" | head -1
    done
fi
echo "fetch-weights: done"
