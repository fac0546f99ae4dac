<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1">
<context>
    <name>ThermoCrop</name>
    <message>
        <location filename="../plugin/dock.py" line="124"/>
        <source>{field} is of type {have} but ThermoCrop writes {want} there</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="124"/>
        <source>text</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="124"/>
        <source>decimals</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="136"/>
        <source>{field} is longer than a shapefile field name may be ({n} characters)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="139"/>
        <source>the probability fields (p_&lt;class&gt;, crop_margin, crop_entropy) do not fit shapefile field names</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="160"/>
        <source>{layer} cannot be edited; write a new layer file instead.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="168"/>
        <source>ThermoCrop classification</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="185"/>
        <source>Saving {layer} failed: {errors}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="214"/>
        <source>{path} is a folder; choose a file name.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="217"/>
        <source>The folder {folder} does not exist; choose an existing folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="219"/>
        <source>The folder {folder} cannot be written to; choose another folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/main.py" line="50"/>
        <source>ThermoCrop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="464"/>
        <source>Classify</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="312"/>
        <source>Explain</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="334"/>
        <source>Accuracy assessment: {message}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="337"/>
        <source>Accuracy assessment finished; the report is on the Accuracy tab.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="340"/>
        <source>Accuracy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="368"/>
        <source>Input</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="372"/>
        <source>Polygon layer of the project whose parcels are classified</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="490"/>
        <source>Parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="375"/>
        <source>Selected features only</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="383"/>
        <source>Ticked scenes are used: the project&apos;s Sentinel-2 rasters and added files or folders</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="385"/>
        <source>Scenes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="387"/>
        <source>Add files…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="388"/>
        <source>Add folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="399"/>
        <source>Temperatures (*.nc *.nc4 *.csv);;All files (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="400"/>
        <source>Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="402"/>
        <source>Weather</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="409"/>
        <source>Model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="411"/>
        <source>ThermoCrop model (*.tcm)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="412"/>
        <source>empty: the shipped model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="421"/>
        <source>Output</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="423"/>
        <source>New layer file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="424"/>
        <source>Write the parcels with the result fields to a new file; the parcel layer is not changed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="426"/>
        <source>Fields of the parcel layer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="427"/>
        <source>Add the result fields to the parcel layer and save it (in a running edit session: one undoable edit)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="436"/>
        <source>GeoPackage (*.gpkg);;Shapefile (*.shp);;GeoJSON (*.geojson);;FlatGeobuf (*.fgb)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="33"/>
        <source>Class field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="34"/>
        <source>Confidence field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="35"/>
        <source>Status field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="449"/>
        <source>Class probabilities, margin and entropy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="450"/>
        <source>Also write p_&lt;class&gt; for every class, crop_margin (best minus second best probability) and crop_entropy (0 sure .. 1 undecided)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="466"/>
        <source>Cancel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="480"/>
        <source>Install missing packages</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="485"/>
        <source>Parcels per class</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="490"/>
        <source>Class</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="490"/>
        <source>Share</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="495"/>
        <source>colour by class</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="495"/>
        <source>colour by confidence</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="496"/>
        <source>The result layer&apos;s style: class colours, or red (unsure) to green (sure)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="499"/>
        <source>only below</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="500"/>
        <source>Show only the parcels whose confidence is below the threshold (a filter on the result layer; untick to show all)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="520"/>
        <source>Explain the selected parcel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="521"/>
        <source>Select one parcel on the map, then press this button</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="525"/>
        <source>Select one parcel of the classified layer to see its NDVI series against the calendar and against growing degree days, and the model&apos;s class probabilities.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="639"/>
        <source>Sentinel-2 scenes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="639"/>
        <source>Rasters (*.tif *.tiff *.jp2);;All (*)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="644"/>
        <source>Folder of Sentinel-2 scenes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="699"/>
        <source>No model at {path}; choose a .tcm file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="704"/>
        <source>Model not available: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="707"/>
        <source>not recorded</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="730"/>
        <source>Installing into {folder} …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="735"/>
        <source>Packages installed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="738"/>
        <source>pip failed ({code}); its output is in the ThermoCrop log:
{tail}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="748"/>
        <source>empty: {name} beside the parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="748"/>
        <source>choose a file (.gpkg, .shp, .geojson, .fgb)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="765"/>
        <source>Choose a parcel layer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="768"/>
        <source>No feature of {layer} is selected; select parcels or untick &apos;Selected features only&apos;.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="773"/>
        <source>Tick or add at least one Sentinel-2 scene.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="777"/>
        <source>The scene {path} does not exist; untick it or add it again.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="782"/>
        <source>Choose a daily temperature file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="785"/>
        <source>The temperature file {path} does not exist; choose an existing file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="790"/>
        <source>The model {path} does not exist; choose a .tcm file or leave the field empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="795"/>
        <source>The class, confidence and status fields need three different names.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="802"/>
        <source>{layer} is not a file layer; choose the new layer file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="811"/>
        <source>Not started: {path} exists and is not to be replaced.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="816"/>
        <source>{layer} is read-only; choose &apos;New layer file&apos; to write the result.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="823"/>
        <source>Cannot write into {layer}: {problems}. Choose other field names or a new layer file.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="828"/>
        <source>Not started: the fields exist and are not to be overwritten.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="854"/>
        <source>Classifying {n} parcels of {layer} …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="881"/>
        <source>The parcel layer was removed while classifying; nothing was written.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="885"/>
        <source>Cancelled; nothing was written and the layer was not changed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="888"/>
        <source>Classification failed: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="893"/>
        <source>{layer} (classified)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="895"/>
        <source>QGIS cannot open the written file {path}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="896"/>
        <source>the new layer {name}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="901"/>
        <source>{layer} (saved)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="902"/>
        <source>{layer} (one edit of the running edit session; Undo reverts it)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="905"/>
        <source>Writing the result failed: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="917"/>
        <source>Classified {done} of {n} parcels into {where}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="960"/>
        <source>{qml} exists and was left as it is.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="962"/>
        <source>Style saved to {qml}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="966"/>
        <source>below 0.4</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="966"/>
        <source>0.4 to 0.6</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="966"/>
        <source>0.6 to 0.8</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="966"/>
        <source>0.8 and above</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="966"/>
        <source>not classified</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="995"/>
        <source>{layer} is being edited; save or discard the edits to filter it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="999"/>
        <source>{layer} cannot be filtered by its provider.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1005"/>
        <source>{names} already exist(s). Overwrite?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1027"/>
        <source>Reading the parcel's pixels …</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1035"/>
        <source>Explaining was cancelled.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1038"/>
        <source>Cannot explain this parcel: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1060"/>
        <source>against calendar date</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1065"/>
        <source>growing degree days (°C·d)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1067"/>
        <source>against thermal time</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1078"/>
        <source>class probability</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1088"/>
        <source> of {layer}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1100"/>
        <source>Select exactly one parcel of {layer} to explain ({n} selected).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1102"/>
        <source>Select exactly one parcel to explain ({n} selected).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/dock.py" line="1106"/>
        <source>Choose the scenes and the weather file on the Classify tab first.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="124"/>
        <source>a {provider} web or database layer, not a file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="127"/>
        <source>not a local file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="154"/>
        <source>cannot be read: {error}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="159"/>
        <source>holds only {bands}: tick it together with the product&apos;s other band files</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="162"/>
        <source>{count} bands without band names: {problem}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="165"/>
        <source>a scene classification (SCL) file; it is read with its scene</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/layers.py" line="166"/>
        <source>{count} band(s), none of them a Sentinel-2 band (a DEM or another raster?)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/main.py" line="52"/>
        <source>Classify parcels with ThermoCrop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/main.py" line="80"/>
        <source>&amp;ThermoCrop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/main.py" line="57"/>
        <source>Missing Python packages: {names}. Open the ThermoCrop dock to install them.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/task.py" line="91"/>
        <source>ThermoCrop: classify parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/task.py" line="204"/>
        <source>ThermoCrop: explain a parcel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/task.py" line="225"/>
        <source>Feature {fid} is no longer in {layer}.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/widgets.py" line="30"/>
        <source>dataset folders, separated by &apos;;&apos;</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/widgets.py" line="39"/>
        <source>Add a dataset folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/widgets.py" line="45"/>
        <source>Dataset folder (from Export training data)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="3"/>
        <source>Crop classification</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="88"/>
        <source>{name} needs {modules}, which this QGIS cannot import.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="138"/>
        <source>Cancelled: {reason}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="230"/>
        <source>The scene folder {folder!r} does not exist; choose an existing folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="233"/>
        <source>Give Sentinel-2 scenes: &apos;{scenes}&apos; (SCENES, layers or files) or &apos;{folder}&apos; (SCENE_FOLDER); one of them is required.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="243"/>
        <source>{dates} dates from {products} products</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../plugin/algorithms/base.py" line="274"/>
        <source>The {what} {path!r} does not exist; choose an existing file or folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="4"/>
        <source>Accuracy assessment</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="5"/>
        <source>Compares the classes of a classified layer with reference (ground truth) classes: confusion matrix, overall accuracy, kappa, and per class the user&apos;s accuracy (1 - commission error), the producer&apos;s accuracy (1 - omission error) and F1. With the map&apos;s class areas as strata weights it also gives area-adjusted accuracies and each class&apos;s estimated area with 95 % confidence intervals (stratified estimators of Olofsson et al. 2014, &apos;Good practices for estimating area and assessing accuracy of land change&apos;). Every feature is part of the map; the features whose reference field is filled are the sample, which should be a random sample within each map class (or of the whole map). Writes an HTML report with the matrix as a heat map and a CSV table.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="6"/>
        <source>Classified layer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="7"/>
        <source>Map (predicted) class field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="8"/>
        <source>Reference class field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="9"/>
        <source>Map class areas</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="10"/>
        <source>Table of map class areas (CSV)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="11"/>
        <source>Accuracy report</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="12"/>
        <source>Per-class table</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="13"/>
        <source>Confusion matrix table</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="14"/>
        <source>The classified layer (e.g. the output of Classify parcels), with the reference class filled on the sampled features and empty elsewhere.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="15"/>
        <source>Field holding the map&apos;s (predicted) class.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="16"/>
        <source>Field holding the reference (ground truth) class, with the same class names as the map; empty where a feature was not checked.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="17"/>
        <source>Where the map&apos;s class areas (strata weights) come from when no class-area table is given: the summed ellipsoidal area of the layer&apos;s features per predicted class (hectares; polygons only), their number, or no weighting (scores of the reference sample only).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="18"/>
        <source>Optional CSV table of the map&apos;s class areas (header, then one row per class: class name, area in any unit, e.g. of a larger map the layer samples). Overrides WEIGHTING.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="19"/>
        <source>The report: summary, confusion matrix as a heat map, per-class and area-adjusted tables (one self-contained file).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="20"/>
        <source>Per-class table: counts, user&apos;s / producer&apos;s accuracy, F1, and the area-adjusted figures with the half-widths of their 95 % intervals; a last row &apos;overall&apos;.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="21"/>
        <source>Optional CSV of the confusion matrix (rows map, columns reference).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="22"/>
        <source>Overall accuracy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="23"/>
        <source>Kappa</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="24"/>
        <source>Area-adjusted overall accuracy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="25"/>
        <source>Reference units</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="26"/>
        <source>Classify parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="27"/>
        <source>Predicts the crop type of every parcel from a Sentinel-2 time series and daily temperatures with a ThermoCrop model (PSE+LTAE with thermal positional encoding). The output keeps every feature and attribute of the input and adds the predicted class, its probability and a status saying why a parcel could not be classified.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="28"/>
        <source>Parcel layer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="29"/>
        <source>Sentinel-2 scenes (these or a folder of scenes)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="30"/>
        <source>Folder of scenes (or the scenes above)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="31"/>
        <source>Daily temperature file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="32"/>
        <source>Model bundle</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="36"/>
        <source>Class probabilities, margin and entropy fields</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="37"/>
        <source>Classified parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="38"/>
        <source>Parcel polygons, any CRS. Every feature is classified.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="39"/>
        <source>Sentinel-2 scenes of one season: multi-band GeoTIFFs, per-band files or .SAFE products, as layers or files (repeat SCENES=... on the command line). Give these, a scene folder, or both: one of the two is required.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="40"/>
        <source>A folder holding the scenes, instead of or besides the scenes above: one of the two is required.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="41"/>
        <source>Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV (date,tmin,tmax) covering the season.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="42"/>
        <source>Model bundle (.tcm). Leave empty for the model shipped with the plugin.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="43"/>
        <source>Name of the output field with the predicted class.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="44"/>
        <source>Name of the output field with the predicted class&apos;s probability (0-1).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="45"/>
        <source>Name of the output field saying &apos;ok&apos; or why a parcel was not classified.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="46"/>
        <source>Also write each class&apos;s probability (p_&lt;class&gt;), the margin between the two likeliest classes (crop_margin) and the normalised entropy of the probabilities (crop_entropy, 0 sure .. 1 undecided).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="47"/>
        <source>Classified parcels, styled by class; the style is saved beside file outputs.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="48"/>
        <source>Parcels classified</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="49"/>
        <source>Export training data</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="50"/>
        <source>Samples up to MAX_PIXELS pixels of every labelled parcel on every scene date, with cloud masks and growing degree days, and writes them as a ThermoCrop dataset folder that Train model reads. The dataset&apos;s classes are the labels found, or the classes a class map gives the crop codes.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="51"/>
        <source>Labelled parcels</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="52"/>
        <source>Label field</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="53"/>
        <source>Crop code table (class map preset)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="54"/>
        <source>Class map file (CSV or YAML)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="55"/>
        <source>Minimum parcels per class</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="56"/>
        <source>Season start</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="57"/>
        <source>Pixels per parcel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="58"/>
        <source>Dataset folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="59"/>
        <source>Parcel polygons with a crop label field.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="60"/>
        <source>Field holding each parcel&apos;s crop label: any class names or crop codes. Parcels with an empty value are left unlabelled.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="61"/>
        <source>Map national crop codes to classes with the table of the paper&apos;s data for France, Denmark or Austria; codes not in the table become &apos;unknown&apos;.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="62"/>
        <source>Or your own class map: a CSV with columns code,class (or a YAML file). Codes not in it become &apos;unknown&apos;. Give either this or a preset, not both.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="63"/>
        <source>Classes with fewer labelled parcels become &apos;unknown&apos; (0: keep every class).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="64"/>
        <source>Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="65"/>
        <source>Season start as MM-DD, or MM-DD/-1 for the previous year.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="66"/>
        <source>Pixels sampled per parcel and date (the paper uses 64).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="67"/>
        <source>Dataset folder to create; it must not exist yet.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="68"/>
        <source>Growing degree days per parcel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="69"/>
        <source>Accumulates growing degree days (GDD) from the season start at each parcel&apos;s centroid, from daily temperatures, and adds one field per date.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="70"/>
        <source>Dates</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="71"/>
        <source>Scenes (for their dates)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="72"/>
        <source>Folder of scenes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="73"/>
        <source>Base temperature</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="74"/>
        <source>Cap temperature</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="75"/>
        <source>Method</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="76"/>
        <source>Parcels with GDD</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="77"/>
        <source>Parcel polygons, any CRS.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="78"/>
        <source>Dates as YYYY-MM-DD separated by commas. Leave empty to use the scene dates.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="79"/>
        <source>Sentinel-2 scenes whose acquisition dates are used when DATES is empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="80"/>
        <source>A folder of scenes whose dates are used when DATES is empty.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="81"/>
        <source>Season start as MM-DD, or MM-DD/-1 for the previous year (e.g. 09-01/-1).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="82"/>
        <source>Base temperature (°C) below which no growth is counted.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="83"/>
        <source>Cap temperature (°C) above which no extra growth is counted.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="84"/>
        <source>paper: clip daily min/max then average; average: average then clip at the base.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="85"/>
        <source>The parcels with one field gdd_YYYYMMDD per date.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="86"/>
        <source>Train model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="87"/>
        <source>Trains a PSE+LTAE classifier with the chosen positional encoding on one or more datasets written by Export training data, and saves a model bundle (.tcm) that Classify parcels and the dock can use.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="88"/>
        <source>Dataset folders</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="89"/>
        <source>Model variant</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="90"/>
        <source>Epochs</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="91"/>
        <source>Steps per epoch</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="92"/>
        <source>Batch size</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="93"/>
        <source>Device</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="94"/>
        <source>Classes (empty: all classes of the datasets)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="95"/>
        <source>Dataset folders, separated by ';' (from Export training data); '…' adds one with a folder dialog.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="96"/>
        <source>Positional encoding: thermal (tpe_*), calendar days, ShiftAug or none.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="97"/>
        <source>Training epochs (the paper trains 100).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="98"/>
        <source>Optimiser steps per epoch (the paper uses 500).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="99"/>
        <source>Parcels per optimiser step (the paper uses 128).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="100"/>
        <source>auto uses a CUDA GPU when there is one, else the CPU.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="101"/>
        <source>The model&apos;s classes, separated by commas (e.g. corn,meadow,winter_wheat,unknown). Empty: every class of the datasets. Parcels of other classes are left out of training.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="algorithm_strings.py" line="102"/>
        <source>Model bundle file (.tcm) to write.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>
